/* Flagging the sample as broken or to be skipped, with a comment; the annotator may withdraw it.
 * A flag is a report, not annotation work: the server takes it in a frozen round too. */

import { $, page } from "./state.js";
import { notice } from "./feedback.js";
import { errorMessage, send } from "./http.js";

const KIND_NAMES = { broken: "broken", skip: "to skip" };

const flagButton = $('[data-role="flag"]');
const form = $('[data-role="flag-form"]');
const stateLine = $('[data-role="flag-state"]');
let current = page.flag || null;
let busy = false;

function renderFlag() {
  if (!flagButton) return;
  flagButton.setAttribute("aria-pressed", current ? "true" : "false");
  flagButton.title = current
    ? "You flagged this sample: change or withdraw the flag"
    : "Report this sample as broken, or ask to skip it";
  stateLine.hidden = !current;
  if (current) {
    stateLine.textContent = `You flagged this sample as ${KIND_NAMES[current.kind] || current.kind}` +
      (current.comment ? `: “${current.comment}”` : ".");
  }
  form.querySelector('[data-role="flag-withdraw"]').hidden = !current;
}

const formError = () => form.querySelector('[data-role="flag-error"]');

export const flagFormOpen = () => Boolean(form && !form.hidden);

/* The form shows the saved flag (or none) when the page opens and after each save or withdrawal; in between it keeps
 * what the person chose and typed, so closing it (Esc, Cancel) and opening it again loses no draft. */
function fillForm() {
  const kind = current ? current.kind : "broken";
  for (const radio of form.querySelectorAll('input[name="kind"]')) radio.checked = radio.value === kind;
  form.elements.comment.value = current ? current.comment : "";
}

export function openFlagForm() {
  if (!form) return;
  formError().hidden = true;
  form.hidden = false;
  flagButton.setAttribute("aria-expanded", "true");
  form.elements.comment.focus();
}

export function closeFlagForm() {
  if (!form || form.hidden) return;
  form.hidden = true;
  flagButton.setAttribute("aria-expanded", "false");
  flagButton.focus();
}

function showError(message) {
  const error = formError();
  error.textContent = "Not saved: " + message;
  error.hidden = false;
}

async function submitFlag(event) {
  event.preventDefault();
  if (busy) return;
  const kind = form.elements.kind.value;
  const comment = form.elements.comment.value;
  busy = true;
  try {
    const result = await send("POST", page.api.flag, { kind, comment, round: page.round });
    if (!result.ok) return showError(errorMessage(result.data, result.status));
    current = { kind: result.data.kind, comment: result.data.comment };
    fillForm();
    renderFlag();
    closeFlagForm();
    notice(`Flagged as ${KIND_NAMES[current.kind] || current.kind}; an admin will look at it.`, "ok");
  } catch (error) {
    showError(error.message);
  } finally {
    busy = false;
  }
}

async function withdrawFlag() {
  if (busy) return;
  busy = true;
  try {
    const result = await send("DELETE", `${page.api.flag}?round=${encodeURIComponent(page.round)}`);
    // 404: there was none to withdraw (withdrawn in another tab): the page agrees now.
    if (!result.ok && result.status !== 404) return showError(errorMessage(result.data, result.status));
    current = null;
    fillForm();
    renderFlag();
    closeFlagForm();
    notice("Flag withdrawn.", "info");
  } catch (error) {
    showError(error.message);
  } finally {
    busy = false;
  }
}

export function initFlag() {
  if (!flagButton || !form) return;
  fillForm();
  renderFlag();
  flagButton.addEventListener("click", () => (flagFormOpen() ? closeFlagForm() : openFlagForm()));
  form.addEventListener("submit", submitFlag);
  form.querySelector('[data-role="flag-withdraw"]').addEventListener("click", withdrawFlag);
  form.querySelector('[data-role="flag-cancel"]').addEventListener("click", closeFlagForm);
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeFlagForm();
    }
  });
}
