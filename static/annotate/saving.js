/* Saving spans: one queue per span, versions on every write, conflicts with other tabs. */

import { $, forgetSpan, make, page, root, sameValue } from "./state.js";
import { notice, setStatus, status } from "./feedback.js";
import { ClientError, errorMessage, send } from "./http.js";
import { renderAll, renderEditor, renderList } from "./spans.js";

const CONFLICT_MESSAGE = "This span was changed in another tab — reloaded the newer version.";

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
  if (!current) {
    span.deleted = true;
    forgetSpan(span);
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
  }
  notice(current ? CONFLICT_MESSAGE : "This span was deleted in another tab — reloaded.", "warn");
  renderAll({ syncNote: true });
}

export async function createOnServer(span) {
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
  const result = await send("POST", page.api.spans, sent);
  if (!result.ok) {
    span.state = "failed";
    if (isFrozenAnswer(result)) throw refuseFrozen(result);
    throw new ClientError(errorMessage(result.data, result.status));
  }
  if (span.deleted) {
    // Deleted while the create was on its way: the queued delete removes it on the server.
    span.id = result.data.id;
    span.version = result.data.version;
    return;
  }
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
  const result = await send("PATCH", spanUrl(span.id), sent);
  if (isFrozenAnswer(result)) throw refuseFrozen(result);
  if (result.status === 409) return adoptConflict(span, result.data);
  if (result.status === 404) {
    forgetSpan(span);
    notice("This span no longer exists — it was deleted elsewhere.", "warn");
    renderAll();
    return;
  }
  if (!result.ok) throw new ClientError(errorMessage(result.data, result.status));
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
    result = await send("DELETE", `${spanUrl(span.id)}?version=${encodeURIComponent(span.version)}`);
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
  throw Object.assign(new ClientError(errorMessage(result.data, result.status)), { keepState: true });
}
