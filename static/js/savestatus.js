/* The save status beside a page's controls: one element, four states (data-state saved | saving |
 * retrying | failed), the same words on every page that saves as the user works (span, pair labeling, audit). */

export function showSaveStatus(el, { saving = false, retrying = false, failure = null, hint = "check your connection" }) {
  let text;
  let kind;
  if (retrying) [text, kind] = ["Failed — retrying", "retrying"];
  else if (saving) [text, kind] = ["Saving…", "saving"];
  else if (failure) [text, kind] = ["Failed: " + failure, "failed"];
  else [text, kind] = ["Saved", "saved"];
  el.textContent = text;
  el.dataset.state = kind;
  el.title = kind === "failed" ? `${text} — ${hint}` : "";
}
