/* Quotes: a reasoning quote and its marks in the texts light up together, and whose quotes the texts highlight
 * (one judge's at a time: j, k or a click on a judge's card), kept while the same item is shown. */

import { hint } from "./messages.js";
import { $, root, shownItem, stage, state } from "./state.js";

function lightQuote(id, on) {
  if (!id) return;
  for (const el of root.querySelectorAll("[data-quote]")) {
    if (el.dataset.quote.split(" ").includes(id)) el.classList.toggle("active", on);
  }
}

/* Hovering or focusing a reasoning quote lights its marks in the texts. */
export function wireQuoteLinks() {
  for (const [type, on] of [["mouseover", true], ["mouseout", false], ["focusin", true], ["focusout", false]]) {
    root.addEventListener(type, (event) => {
      const quote = event.target.closest && event.target.closest('[data-role="reasoning-quote"]');
      if (quote) lightQuote(quote.dataset.quote, on);
    });
  }
}

const judgeCards = () => [...root.querySelectorAll('#audit-view [data-role="judge"]')];

/* Light the marks of ``card``'s judge and no other's; its card says so (quotes-lit, its button pressed). */
function showQuotesOf(card, { reveal = false } = {}) {
  const number = card.dataset.judgeNumber;
  for (const other of judgeCards()) {
    other.classList.toggle("quotes-lit", other === card);
    const button = other.querySelector('[data-role="show-quotes"]');
    if (button) button.setAttribute("aria-pressed", String(other === card));
  }
  for (const mark of root.querySelectorAll('#audit-view mark[data-role="quote"]')) {
    mark.toggleAttribute("data-lit", mark.dataset.judges.split(" ").includes(number));
  }
  const owner = $('[data-role="quotes-owner"]');
  if (owner) {
    owner.dataset.quotes = card.querySelector('[data-role="show-quotes"]') ? "some" : "none";
    owner.querySelector('[data-role="quotes-owner-name"]').textContent = card.dataset.judge;
  }
  state.quotesOf = { item: shownItem(), judge: card.dataset.judge };
  if (reveal) {
    // The texts, not the page, move: the highlights stay in view, and the line above them names the judge.
    for (const text of root.querySelectorAll("#audit-view .audit-texts .text")) bringLitMarkIntoView(text);
    bringCardIntoItsBox(card);
  }
}

/* Where the judges' answers scroll in a box of their own (a narrow window), the chosen card comes into it. */
function bringCardIntoItsBox(card) {
  const list = card.closest('[data-role="judges"]');
  if (!list || list.scrollHeight <= list.clientHeight) return;
  const box = list.getBoundingClientRect();
  const rect = card.getBoundingClientRect();
  if (rect.top < box.top) list.scrollTop -= box.top - rect.top;
  else if (rect.bottom > box.bottom) list.scrollTop += Math.min(rect.bottom - box.bottom, rect.top - box.top);
}

/* A text whose highlighted passages are all out of its box scrolls (the box alone, not the page) to the first. */
function bringLitMarkIntoView(text) {
  const lit = [...text.querySelectorAll("mark[data-lit]")];
  if (!lit.length) return;
  const box = text.getBoundingClientRect();
  const inView = (mark) => {
    const rect = mark.getBoundingClientRect();
    return rect.bottom > box.top && rect.top < box.bottom;
  };
  if (lit.some(inView)) return;
  const padding = parseFloat(getComputedStyle(text).paddingTop) || 0;
  text.scrollTop += lit[0].getBoundingClientRect().top - box.top - padding;
}

/* j: the next judge's quotes, k: the previous one's (round the list). */
export function stepJudge(step) {
  const cards = judgeCards();
  if (!cards.length) {
    hint(stage() === "blind"
      ? "Give your own score first (1-5): the judges' answers and their quotes are hidden until then."
      : "No judge's answer is shown: no quote to highlight.");
    return;
  }
  const at = cards.findIndex((card) => card.classList.contains("quotes-lit"));
  showQuotesOf(cards[(at + step + cards.length) % cards.length], { reveal: true });
}

/* After a swap: the same item keeps the judge chosen for it (blind mode switched); another starts at the top one's. */
export function restoreQuotes() {
  const chosen = state.quotesOf;
  if (!chosen || chosen.item !== shownItem()) {
    state.quotesOf = null;
    return;
  }
  const card = judgeCards().find((el) => el.dataset.judge === chosen.judge);
  if (card) showQuotesOf(card);
}

/* A click on a judge's card (its button, or anywhere but a link or its raw answer) shows that judge's quotes. */
export function wireJudgeCards() {
  root.addEventListener("click", (event) => {
    const card = event.target.closest && event.target.closest('[data-role="judge"]');
    if (!card || event.target.closest("a, summary, details")) return;
    if (window.getSelection && String(window.getSelection()).length) return; // selecting its words to copy them
    showQuotesOf(card, { reveal: true });
  });
}
