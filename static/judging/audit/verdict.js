/* The verdict form: its hidden inputs kept in step with the keys (score, agree, reasoning wrong) and its sending.
 * In blind mode a score sends the form to reveal the judges (blind.js keeps track of that reveal). */

import { saveOnceRevealed } from "./blind.js";
import { rememberChoice } from "./choice.js";
import { hint, refusedWhileBusy } from "./messages.js";
import { refusedWhileSettling } from "./settle.js";
import { form, stage } from "./state.js";

export function showChoice() {
  const f = form();
  if (!f) return;
  const score = f.querySelector('[data-role="score-input"]').value;
  const agreed = f.querySelector('[data-role="agreed-input"]').value === "1";
  for (const button of f.querySelectorAll("[data-score]")) {
    button.setAttribute("aria-pressed", String(!agreed && button.dataset.score === score));
  }
  const agree = f.querySelector('[data-role="agree"]');
  if (agree) agree.setAttribute("aria-pressed", String(agreed));
}

/* Every choice below waits while a request is on its way (refusedWhileBusy says so): it would land on the output
 * that comes next, unread; and for a moment after another output appears (refusedWhileSettling: settle.js), so that
 * keys typed ahead never judge it unread. A choice made is kept for a reload (choice.js). */
export function chooseScore(score) {
  const f = form();
  if (!f || refusedWhileBusy() || refusedWhileSettling()) return;
  f.querySelector('[data-role="score-input"]').value = String(score);
  f.querySelector('[data-role="agreed-input"]').value = "";
  showChoice();
  rememberChoice();
  // Blind mode: the score is the auditor's own, given before the judges' answers; sending it reveals them.
  if (stage() === "blind") f.requestSubmit();
}

export function agree() {
  const f = form();
  if (!f || refusedWhileBusy() || refusedWhileSettling()) return;
  if (stage() === "blind") {
    hint("Give your own score first (1-5): the judges' answers are hidden until then.");
    return;
  }
  const score = f.dataset.agreeScore;
  if (!score) {
    hint(f.dataset.agreeRefusal || "There is no judge's score to agree with: give your own (1-5).");
    return;
  }
  const agreed = f.querySelector('[data-role="agreed-input"]');
  const undo = agreed.value === "1";
  agreed.value = undo ? "" : "1";
  f.querySelector('[data-role="score-input"]').value = undo ? "" : score;
  showChoice();
  rememberChoice();
}

export function toggleReasoningWrong() {
  const box = form() && form().querySelector('[data-role="reasoning-wrong"]');
  if (!box || refusedWhileBusy() || refusedWhileSettling()) return;
  if (box.disabled) {
    // No reasoning shown yet (blind: score first), or the answer shown gives none (data-refusal says which judge).
    hint(box.dataset.refusal || "Give your own score first (1-5): then the reasoning is shown and can be marked wrong.");
    return;
  }
  box.checked = !box.checked;
  rememberChoice();
}

export function submit() {
  const f = form();
  if (!f) return;
  if (saveOnceRevealed()) return;
  if (refusedWhileBusy() || refusedWhileSettling()) return;
  if (stage() === "blind") {
    hint("Give your own score first (1-5): the judges' answers appear after it.");
    return;
  }
  if (!f.querySelector('[data-role="score-input"]').value) {
    hint("Give a score (1-5) or agree with the judge (a) first.");
    return;
  }
  f.requestSubmit();
}
