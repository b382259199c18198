/* The pair labeling page's shared parts: its timings, label words, elements and state. */

export const NOTICE_MS = 8000;
/* How long a new item is on screen before an answer key (or click) counts. A double press of h or n, 120-250 ms
 * apart, saved its second answer on the item that followed, unread: the busy guard only covers the first answer's
 * round trip (~55 ms). 300 ms drops such a second press (and a fast key-bounce), yet is shorter than anyone reads a
 * span in its two texts, so a judge who reads never waits for it. The answers stay dimmed until then. */
export const SETTLE_MS = 300;
/* How long the "too fast" cue stays after a press the page ignored (an item not settled yet, or an answer still on its
 * way): long enough to be read, short enough not to sit over the next answers. */
export const TOO_FAST_MS = 1600;
export const LABEL_BY_KEY = { h: "H", n: "N", "?": "?" };
export const LABEL_WORDS = { H: "hallucination", N: "not hallucination", "?": "cannot determine" };

export const root = document.getElementById("pair-labeler");
export const api = JSON.parse(document.getElementById("pair-page").textContent);
export const $ = (selector) => root.querySelector(selector);

export const els = {
  item: $('[data-role="item"]'),
  loading: $('[data-role="loading"]'),
  original: $('[data-role="original"]'),
  perturbed: $('[data-role="perturbed"]'),
  change: $('[data-role="change"]'),
  end: $('[data-role="no-more-items"]'),
  endMessage: $('[data-role="end-message"]'),
  endDefault: $('template[data-role="end-default"]'),
  progress: $('[data-role="progress"]'),
  answered: $('[data-role="answered"]'),
  left: $('[data-role="left"]'),
  leftNoun: $('[data-role="left-noun"]'),
  status: $('[data-role="save-status"]'),
  tooFast: $('[data-role="too-fast"]'),
  notice: $('[data-role="notice"]'),
  undo: $('[data-role="undo"]'),
  guidelines: $('[data-role="guidelines"]'),
  toggleGuidelines: $('[data-role="toggle-guidelines"]'),
};

export const state = {
  item: null, // the item on screen, as the API gave it
  busy: false, // an answer or an undo is on its way: keys wait, so no answer lands on an unseen item
  undoNoticeFor: null, // the id of the item the "taken back: answer again" notice is about, while it shows
  answered: null, // the judge's answers in this project, from the API's progress
  unsent: null, // {item, label}: an answer that gave up, sent again on its own; {next: true}: the first item, asked again
  status: { pending: 0, retrying: 0, error: null, hint: null },
};
