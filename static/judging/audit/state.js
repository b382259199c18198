/* The audit page's root element and the state its modules share, with the lookups they all make: the verdict
 * form, its stage (blind or open) and the item on screen. The swap replaces every element of #audit-view, so these
 * are looked up on each use, never kept. */

export const root = document.getElementById("auditor");
export const $ = (selector) => root.querySelector(selector);

export const state = {
  busy: false, // a form is on its way: keys wait, so no verdict lands on an output not yet shown
  pending: null, // what is on its way while busy: "save", "reveal", "blind" or "load" (the cue a waiting key gets)
  retrying: false, // a request that failed is tried again in a moment (resend.js): the status says so, keys wait
  failure: null, // why the last request failed, for the save status, and the status's title (null: the usual)
  failureTitle: null,
  revealing: null, // blind mode: the item whose score was sent to reveal its judges, until their answer settles
  saveAfterReveal: null, // the item whose verdict Enter asked to save while its reveal was on its way
  swappedFrom: undefined, // the item on screen when the view was swapped, and the control that had the focus
  focusedControl: null,
  scrollBeforeHelp: null, // where the page was when ? brought the shortcut list into view: Esc goes back there
  quotesOf: null, // {item, judge}: the judge whose quotes the texts highlight, kept while the same item is shown
};

export const form = () => $('[data-role="audit-form"]');
export const stage = () => (form() ? form().dataset.stage : null);
export const shownItem = () => {
  const view = $("#audit-view");
  return view ? view.dataset.itemId || null : null;
};
/* What #audit-view shows: "open", "blind", "change" (a saved verdict brought back with u) or "empty". */
export const viewState = () => {
  const view = $("#audit-view");
  return view ? view.dataset.state : null;
};
