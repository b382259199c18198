/* Saving spans: one queue per span, versions on every write, conflicts with other tabs. */

import { $, forgetSpan, leafLabels, make, page, root, sameValue, state } from "./state.js";
import { notice, setStatus, status } from "./feedback.js";
import { ClientError, PATIENT_RETRY_DELAYS_MS, errorMessage, isSessionRefusal, send } from "./http.js";
import { renderAll, renderEditor, renderList } from "./spans.js";

const CONFLICT_MESSAGE = "This span was changed in another tab — reloaded the newer version.";

/* Writes wait out a server restart or a dropped connection (about 45 s of tries) before they count as failed. */
const PATIENT = { delays: PATIENT_RETRY_DELAYS_MS };

/* A write the server refused. Refused for the login session (logged out, or another user logged in since, in
 * another tab), it may go through later: it is marked retryable, and its words say what to do, briefly (the
 * session banner says the rest). */
export function refusal(result) {
  const error = new ClientError(refusalMessage(result));
  if (isSessionRefusal(result.status, result.data)) error.retryable = true;
  return error;
}

function refusalMessage(result) {
  if (result.status === 403 && result.data && result.data.code === "other_user") {
    const user = document.body.dataset.user;
    return `another user has logged in in this browser: log in as ${user || "yourself"} again (another tab), then Retry`;
  }
  return errorMessage(result.data, result.status);
}

/* Writes to one span run one after another, so each carries the version the previous returned. */
export function enqueue(span, op) {
  const epoch = span.epoch;
  status.pending++;
  setStatus();
  const run = async () => {
    try {
      if (span.epoch !== epoch) return; // a conflict reloaded this span: drop writes made before it
      await op();
      status.error = null;
    } catch (error) {
      status.error = error.message || String(error);
      if (!error.keepState) {
        span.state = "failed";
        span.error = error.message;
        // Network errors and 5xx answers that outlasted the tries, and session refusals, are tried again on their own
        // when the server is heard from (actions.js); a refusal of the span itself (400, frozen) is not.
        span.retryable = !(error instanceof ClientError) || Boolean(error.retryable);
      }
      renderList();
    } finally {
      status.pending--;
      setStatus();
    }
  };
  span.queue = span.queue.then(run, run);
  return span.queue;
}

/* The round became read-only (submitted, or round 2 opened) while this page was open,
 * or the server said so: show why, and turn every editing control off. */
export function freeze(reason) {
  page.frozen = reason;
  page.can_edit = false;
  page.can_mark_not_done = false;
  root.classList.add("read-only");
  let banner = $('[data-role="frozen-notice"]');
  if (!banner) {
    banner = make("p", "frozen-notice");
    banner.dataset.role = "frozen-notice";
    banner.setAttribute("role", "status");
    $('[data-role="notice"]').after(banner);
  }
  banner.textContent = reason;
  banner.hidden = false;
  renderAll();
  // The done controls and the undo toast listen (they live in modules that import this one).
  root.dispatchEvent(new CustomEvent("annotate:frozen"));
}

/* A write refused because the round is frozen: 409 with {"detail": reason, "frozen": true}. */
export const isFrozenAnswer = (result) => result.status === 409 && Boolean(result.data && result.data.frozen);

function refuseFrozen(result) {
  const reason = errorMessage(result.data, result.status);
  freeze(reason);
  notice(reason, "warn", true);
  return new ClientError(reason);
}

const spanUrl = (id) => page.api.span.replace("{id}", String(id));

/* Take the server's answer; fields the user changed again since sending stay local. */
function applyServer(span, data, sent) {
  span.id = data.id;
  span.version = data.version;
  span.start = data.start;
  span.end = data.end;
  span.text = data.text;
  span.annotator = data.annotator;
  span.serverNote = data.note || "";
  for (const field of ["labels", "note", "source_start", "source_end"]) {
    if (!(field in sent) || sameValue(span[field], sent[field])) span[field] = field === "note" ? data.note || "" : data[field];
  }
  if (sameValue(span.source_start, data.source_start) && sameValue(span.source_end, data.source_end)) {
    span.source_text = data.source_text;
  }
  span.state = "saved";
  span.error = null;
}

function adoptConflict(span, data) {
  span.epoch++;
  clearTimeout(span.noteTimer);
  span.noteTimer = null;
  const current = data && data.current;
  // A note typed here since the last save, which the newer version throws away: kept, so it can be used again.
  const newer = (current && current.note) || "";
  const typed = span.note !== span.serverNote && span.note.trim() && span.note !== newer ? span.note : null;
  if (!current) {
    span.deleted = true;
    forgetSpan(span);
    if (typed) {
      notice(`This span was deleted in another tab — reloaded. Your note was not saved: “${typed}”`, "warn", true);
      renderAll({ syncNote: true });
      return;
    }
  } else {
    span.deleted = false;
    span.state = "saved";
    span.error = null;
    Object.assign(span, {
      id: current.id,
      version: current.version,
      start: current.start,
      end: current.end,
      text: current.text,
      labels: current.labels || [],
      note: current.note || "",
      serverNote: current.note || "",
      source_start: current.source_start ?? null,
      source_end: current.source_end ?? null,
      source_text: current.source_text ?? null,
    });
    if (typed) span.discardedNote = typed;
  }
  notice(
    current
      ? CONFLICT_MESSAGE + (typed ? " Your note was not saved: it is kept under the note field, to use or copy." : "")
      : "This span was deleted in another tab — reloaded.",
    "warn",
  );
  renderAll({ syncNote: true });
}

/* Whether a 409's stored span holds every field of the change already (the change itself, saved by a try whose
 * answer was lost). */
function holdsAlready(data, fields) {
  const current = data && data.current;
  if (!current) return false;
  const leaves = (labels) => leafLabels(labels || []).slice().sort();
  return Object.entries(fields).every(([field, value]) => {
    if (field === "note") return (current.note || "") === (value || "");
    if (field === "labels") return sameValue(leaves(current.labels), leaves(value));
    return sameValue(current[field] ?? null, value ?? null);
  });
}

const shorten = (text, max) => (text.length > max ? text.slice(0, max - 1) + "…" : text);

/* Another span of the page that is the stored span ``id`` (not being deleted), or null. */
const shownAs = (copy, id) => state.spans.find((other) => other !== copy && other.id === id && !other.deleted) || null;

/* The server holds this span already (same offsets and labels): the page keeps one span, never a copy.
 * ``current`` is the stored span, answered 200 for a true repeat or 409 {existing, current} when its
 * note or source link differ. A note typed or a link made on the copy is what the annotator meant for
 * the span, so it goes onto the stored one; an empty note or no link (a span saved afresh from a
 * selection) leaves the stored ones as they are. */
async function settleTwin(copy, current) {
  const changes = {};
  if (copy.note && copy.note !== (current.note || "")) changes.note = copy.note;
  if (copy.source_start !== null && (copy.source_start !== current.source_start || copy.source_end !== current.source_end)) {
    changes.source_start = copy.source_start;
    changes.source_end = copy.source_end;
  }
  const given = [changes.note !== undefined && "note", changes.source_start !== undefined && "source link"].filter(Boolean);
  const held = shownAs(copy, current.id);
  notice(
    `“${shorten(current.text, 40)}” as ${leafLabels(current.labels || []).join(", ")} is already saved — ` +
      `${held ? "selected" : "showing"} it instead of saving a copy` +
      (given.length ? `, with the new ${given.join(" and ")}.` : "."),
    "info",
  );
  if (held) {
    // The page shows the stored span already: drop the copy (and its queued writes) and edit that one.
    copy.epoch++;
    clearTimeout(copy.noteTimer);
    copy.noteTimer = null;
    copy.deleted = true;
    forgetSpan(copy);
    if (changes.note !== undefined) held.note = changes.note;
    if (changes.source_start !== undefined) {
      Object.assign(held, { source_start: copy.source_start, source_end: copy.source_end, source_text: copy.source_text });
    }
    state.activeKey = held.key;
    renderAll({ syncNote: true });
    if (given.length) enqueue(held, () => patchOnServer(held, changes));
    return;
  }
  // The copy becomes the stored span, keeping what the annotator gave it.
  Object.assign(copy, {
    id: current.id,
    version: current.version,
    start: current.start,
    end: current.end,
    text: current.text,
    labels: current.labels || [],
    annotator: current.annotator,
    serverNote: current.note || "",
    state: "saved",
    error: null,
  });
  if (changes.note === undefined) copy.note = current.note || "";
  if (changes.source_start === undefined) {
    Object.assign(copy, {
      source_start: current.source_start ?? null,
      source_end: current.source_end ?? null,
      source_text: current.source_text ?? null,
    });
  }
  renderAll({ syncNote: true });
  if (given.length) await patchOnServer(copy, changes);
}

export async function createOnServer(span) {
  // A span deleted a moment ago at the same place: let that delete reach the server first, or this
  // save would be answered with the span being deleted.
  await Promise.all(
    state.spans
      .filter((other) => other !== span && other.deleted && other.start === span.start && other.end === span.end)
      .map((other) => other.queue),
  );
  const sent = {
    sample: page.sample_id,
    round: page.round,
    start: span.start,
    end: span.end,
    labels: span.labels.slice(),
    note: span.note,
    source_start: span.source_start,
    source_end: span.source_end,
  };
  span.state = "saving";
  const result = await send("POST", page.api.spans, sent, PATIENT);
  const twin = result.status === 409 && result.data && result.data.existing && result.data.current ? result.data.current : null;
  if (!result.ok && !twin) {
    span.state = "failed";
    if (isFrozenAnswer(result)) throw refuseFrozen(result);
    throw refusal(result);
  }
  const stored = twin || result.data;
  if (span.deleted) {
    // Deleted while the create was on its way: the queued delete removes what this save stored, never
    // a span that was there before (one the page shows, or a twin with another note).
    if (!twin && !shownAs(span, stored.id)) {
      span.id = stored.id;
      span.version = stored.version;
    }
    return;
  }
  // 200, not 201: a repeat of a stored span; the page may show that one already.
  if (twin || (result.status === 200 && shownAs(span, stored.id))) return settleTwin(span, stored);
  applyServer(span, result.data, sent);
  renderAll();
}

export async function patchOnServer(span, fields) {
  if (span.deleted) return;
  if (!span.id) {
    // The create failed; its retry sends the whole span, this change included.
    return;
  }
  const sent = Object.assign({}, fields, { version: span.version });
  const result = await send("PATCH", spanUrl(span.id), sent, PATIENT);
  if (isFrozenAnswer(result)) throw refuseFrozen(result);
  if (result.status === 409 && holdsAlready(result.data, fields)) {
    // A retry of a change the server took, whose answer was lost: the newer version is this change, nothing to tell.
    applyServer(span, result.data.current, fields);
    renderList();
    renderEditor(false);
    return;
  }
  if (result.status === 409) return adoptConflict(span, result.data);
  // Deleted in another tab (or by an admin): gone, as a 409 without `current` says; a note typed here is given back.
  if (result.status === 404) return adoptConflict(span, { current: null });
  if (!result.ok) throw refusal(result);
  applyServer(span, result.data, fields);
  renderList();
  renderEditor(false);
}

export async function deleteOnServer(span) {
  if (!span.id) {
    forgetSpan(span);
    return;
  }
  let result;
  try {
    result = await send("DELETE", `${spanUrl(span.id)}?version=${encodeURIComponent(span.version)}`, undefined, PATIENT);
  } catch (error) {
    span.deleted = false;
    renderAll();
    throw Object.assign(new ClientError("could not delete the span: " + error.message), { keepState: true });
  }
  if (result.status === 204 || result.status === 404) {
    forgetSpan(span);
    return;
  }
  span.deleted = false;
  if (isFrozenAnswer(result)) throw Object.assign(refuseFrozen(result), { keepState: true });
  if (result.status === 409) return adoptConflict(span, result.data);
  renderAll();
  throw Object.assign(refusal(result), { keepState: true });
}
