/* FaithLab annotation page: plain JavaScript, no framework, no build step.
 *
 * Offsets exchanged with the server are Unicode code points, end-exclusive;
 * the DOM counts UTF-16 code units. Every offset is converted at the border
 * (TextIndex), so emoji and other non-BMP characters keep spans exact.
 * User text only ever enters the DOM as text nodes / textContent.
 */
(function () {
  "use strict";

  const dataNode = document.getElementById("page-data");
  const root = document.getElementById("annotator");
  if (!dataNode || !root) return;
  const page = JSON.parse(dataNode.textContent);

  const SELECTION_DEBOUNCE_MS = 120;
  const NOTE_DEBOUNCE_MS = 500;
  const RETRY_DELAYS_MS = [500, 1000, 2000, 4000];
  const NOTICE_MS = 8000;
  const SEVERITY = { C: 0, B: 1, Q: 2, U: 3 };
  const CONFLICT_MESSAGE = "This span was changed in another tab — reloaded the newer version.";

  const $ = (selector, within) => (within || root).querySelector(selector);
  const make = (tag, className, text) => {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined && text !== null) el.textContent = text;
    return el;
  };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  /* ---------- code points <-> UTF-16 ---------- */

  class TextIndex {
    constructor(text) {
      this.text = text;
      const cpToU16 = [0];
      let units = 0;
      for (const ch of text) {
        units += ch.length;
        cpToU16.push(units);
      }
      this.cpToU16 = cpToU16;
      this.u16ToCp = new Int32Array(text.length + 1);
      for (let cp = 0; cp + 1 < cpToU16.length; cp++) {
        for (let u = cpToU16[cp]; u < cpToU16[cp + 1]; u++) this.u16ToCp[u] = cp;
      }
      this.u16ToCp[text.length] = cpToU16.length - 1;
    }
    get length() {
      return this.cpToU16.length - 1;
    }
    clamp(cp) {
      return Math.max(0, Math.min(cp, this.length));
    }
    toU16(cp) {
      return this.cpToU16[this.clamp(cp)];
    }
    /* A UTF-16 position inside a surrogate pair rounds down (start) or up (end). */
    toCp(u16, roundUp) {
      const u = Math.max(0, Math.min(u16, this.text.length));
      let cp = this.u16ToCp[u];
      if (roundUp && this.cpToU16[cp] < u) cp += 1;
      return cp;
    }
    slice(start, end) {
      return this.text.slice(this.toU16(start), this.toU16(end));
    }
  }

  /* ---------- state ---------- */

  const labelCategory = {};
  const labelByHotkey = {};
  for (const label of page.labels || []) {
    labelCategory[label.name] = label.category;
    if (label.hotkey) labelByHotkey[String(label.hotkey)] = label.name;
    let parent = label.name;
    while (parent.includes(".")) {
      parent = parent.slice(0, parent.lastIndexOf("."));
      if (!(parent in labelCategory)) labelCategory[parent] = label.category;
    }
  }

  const sortedSentences = (list) =>
    (list || []).map((pair) => [pair[0], pair[1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);

  const sides = {
    summary: {
      el: $('[data-role="summary"]'),
      index: new TextIndex(page.summary || ""),
      sentences: sortedSentences(page.summary_sentences),
      shading: null,
    },
    source: {
      el: $('[data-role="source"]'),
      index: new TextIndex(page.source || ""),
      sentences: sortedSentences(page.source_sentences),
      shading: null,
    },
  };

  const state = {
    spans: [],
    activeKey: null,
    preview: null, // index of the other annotator's span shown in the texts (round 2)
    done: Boolean(page.done),
    doneCount: page.done_count || 0,
    busyDone: false,
  };
  let keySequence = 0;

  function makeSpan(data) {
    return {
      key: data.id ? "s" + data.id : "new" + ++keySequence,
      id: data.id || null,
      version: data.version || null,
      start: data.start,
      end: data.end,
      text: data.text,
      labels: (data.labels || []).slice(),
      note: data.note || "",
      serverNote: data.note || "",
      source_start: data.source_start ?? null,
      source_end: data.source_end ?? null,
      source_text: data.source_text ?? null,
      annotator: data.annotator || "",
      mine: data.mine !== false,
      state: data.id ? "saved" : "saving", // saved | saving | failed
      error: null,
      deleted: false,
      epoch: 0,
      queue: Promise.resolve(),
      noteTimer: null,
    };
  }
  for (const span of page.spans || []) state.spans.push(makeSpan(span));

  const visibleSpans = () =>
    state.spans
      .filter((span) => !span.deleted)
      .sort((a, b) => a.start - b.start || a.end - b.end || (a.id || 1e12) - (b.id || 1e12));
  const spanByKey = (key) => state.spans.find((span) => span.key === key) || null;
  const activeSpan = () => {
    const span = spanByKey(state.activeKey);
    return span && !span.deleted ? span : null;
  };
  const editable = (span) => Boolean(page.can_edit && span && span.mine);

  function categoryOf(labels) {
    let worst = null;
    for (const label of labels) {
      const category = label.startsWith("Unwanted") ? "U" : labelCategory[label];
      if (category && (worst === null || SEVERITY[category] > SEVERITY[worst])) worst = category;
    }
    return worst || "X";
  }
  /* FaithBench stores ["Unwanted", "Unwanted.Intrinsic"]; show only the most specific ones. */
  const leafLabels = (labels) => labels.filter((label) => !labels.some((other) => other.startsWith(label + ".")));

  /* ---------- rendering the two texts ---------- */

  function offsetIn(container, node, offset) {
    const range = document.createRange();
    range.setStart(container, 0);
    range.setEnd(node, offset);
    return range.toString().length;
  }

  function pointAt(container, u16) {
    const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
    let seen = 0;
    let last = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (u16 <= seen + node.data.length) return { node, offset: u16 - seen };
      seen += node.data.length;
      last = node;
    }
    return last ? { node: last, offset: last.data.length } : { node: container, offset: 0 };
  }

  function captureSelection(container) {
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0) return null;
    if (!container.contains(selection.anchorNode) || !container.contains(selection.focusNode)) return null;
    return {
      anchor: offsetIn(container, selection.anchorNode, selection.anchorOffset),
      focus: offsetIn(container, selection.focusNode, selection.focusOffset),
    };
  }

  function restoreSelection(container, saved) {
    if (!saved) return;
    const anchor = pointAt(container, saved.anchor);
    const focus = pointAt(container, saved.focus);
    window.getSelection().setBaseAndExtent(anchor.node, anchor.offset, focus.node, focus.offset);
  }

  /* Split a text at every sentence and mark boundary. Sentences become
   * [data-sentence] elements; gaps between them stay plain text; pieces covered
   * by marks get a .seg element. textContent stays exactly the original text. */
  function renderText(sideName) {
    const side = sides[sideName];
    const { index, sentences } = side;
    const n = index.length;
    const marks = sideName === "summary" ? summaryMarks() : sourceMarks();
    const bounds = new Set([0, n]);
    for (const [a, b] of sentences) {
      bounds.add(index.clamp(a));
      bounds.add(index.clamp(b));
    }
    for (const mark of marks) {
      bounds.add(index.clamp(mark.start));
      bounds.add(index.clamp(mark.end));
    }
    const cuts = [...bounds].sort((a, b) => a - b);
    const fragment = document.createDocumentFragment();
    let sentencePos = 0;
    let sentenceEl = null;
    let sentenceElIndex = -1;
    for (let i = 0; i + 1 < cuts.length; i++) {
      const a = cuts[i];
      const b = cuts[i + 1];
      while (sentencePos < sentences.length && sentences[sentencePos][1] <= a) sentencePos++;
      const sentence = sentences[sentencePos];
      let parent = fragment;
      if (sentence && sentence[0] <= a && b <= sentence[1]) {
        if (sentenceElIndex !== sentencePos) {
          sentenceEl = make("span", "sentence");
          sentenceEl.dataset.sentence = String(sentencePos);
          fragment.appendChild(sentenceEl);
          sentenceElIndex = sentencePos;
        }
        parent = sentenceEl;
      } else {
        sentenceElIndex = -1;
      }
      const textNode = document.createTextNode(index.slice(a, b));
      const covering = marks.filter((mark) => mark.start <= a && b <= mark.end);
      if (!covering.length) {
        parent.appendChild(textNode);
      } else {
        const seg = sideName === "summary" ? summarySegment(covering) : sourceSegment(covering);
        seg.appendChild(textNode);
        parent.appendChild(seg);
      }
    }
    const saved = captureSelection(side.el);
    side.el.replaceChildren(fragment);
    restoreSelection(side.el, saved);
    applyShading(sideName);
  }

  function summaryMarks() {
    const preview = previewedOther();
    const marks = visibleSpans();
    return preview ? marks.concat([{ start: preview.start, end: preview.end, kind: "preview" }]) : marks;
  }

  function sourceMarks() {
    const marks = [];
    const span = activeSpan();
    if (span && span.source_start !== null && span.source_end !== null) {
      marks.push({ start: span.source_start, end: span.source_end, kind: "linked" });
    }
    const preview = previewedOther();
    if (preview && preview.source_start !== null && preview.source_end !== null) {
      marks.push({ start: preview.source_start, end: preview.source_end, kind: "preview" });
    }
    return marks;
  }

  function summarySegment(covering) {
    const previewed = covering.some((mark) => mark.kind === "preview");
    // Shortest first: a click picks the innermost span.
    const spans = covering
      .filter((mark) => mark.kind !== "preview")
      .sort((a, b) => a.end - a.start - (b.end - b.start));
    const seg = make("span", "seg");
    if (previewed) seg.classList.add("preview");
    if (!spans.length) return seg;
    const categories = spans.map((span) => categoryOf(span.labels));
    const worst = categories.reduce((w, c) => ((SEVERITY[c] ?? -1) > (SEVERITY[w] ?? -1) ? c : w), "X");
    seg.classList.add("cat-" + worst);
    if (spans.length > 1) seg.classList.add("overlap");
    if (spans.some((span) => span.key === state.activeKey)) seg.classList.add("active");
    if (spans.some((span) => !span.id)) seg.classList.add("pending");
    if (spans.some((span) => !span.mine)) seg.classList.add("others");
    seg.dataset.spans = spans.map((span) => span.key).join(" ");
    // One underline per covering span, stacked, so overlaps stay readable.
    seg.style.boxShadow = categories
      .map((category, i) => `inset 0 -${2 * (i + 1)}px 0 var(--span-${category})`)
      .join(", ");
    seg.title = spans.map((span) => leafLabels(span.labels).join(", ") + (span.mine ? "" : ` (${span.annotator})`)).join(" · ");
    return seg;
  }

  function sourceSegment(covering) {
    const seg = make("span", "seg");
    if (covering.some((mark) => mark.kind === "linked")) seg.classList.add("linked");
    if (covering.some((mark) => mark.kind === "preview")) seg.classList.add("preview");
    return seg;
  }

  const SHADE_CLASSES = ["shade-0", "shade-1", "shade-2", "shade-3", "shade-4", "closest"];

  function applyShading(sideName) {
    const shading = sides[sideName].shading;
    for (const el of sides[sideName].el.querySelectorAll("[data-sentence]")) {
      el.classList.remove(...SHADE_CLASSES);
      el.removeAttribute("data-similarity");
      if (!shading) continue;
      const i = Number(el.dataset.sentence);
      const value = shading.byIndex.get(i);
      if (value) {
        el.dataset.similarity = Number(value.similarity).toFixed(3);
        el.classList.add("shade-" + Math.max(0, Math.min(4, value.shade | 0)));
        el.title = `similarity ${Number(value.similarity).toFixed(3)}`;
      }
      if (shading.closest.has(i)) el.classList.add("closest");
    }
  }

  /* ---------- span list and editor ---------- */

  const spanList = $('[data-role="span-list"]');
  const noSpans = $('[data-role="no-spans"]');
  const spanCount = $('[data-role="span-count"]');

  function renderList() {
    const spans = visibleSpans();
    const items = spans.map((span) => {
      const item = make("li", "span-item cat-" + categoryOf(span.labels));
      if (span.id) item.dataset.spanId = String(span.id);
      item.dataset.spanKey = span.key;
      if (span.key === state.activeKey) {
        item.classList.add("active");
        item.setAttribute("aria-current", "true");
      }
      if (!span.mine) item.classList.add("others");
      item.tabIndex = -1;
      item.appendChild(make("span", "span-swatch"));
      const body = make("div", "span-body");
      const line = make("div", "span-line");
      line.appendChild(make("q", "span-text", span.text));
      const labels = make("span", "span-labels");
      for (const label of leafLabels(span.labels)) labels.appendChild(make("span", "chip", label));
      if (!span.labels.length) {
        // Imported data can hold a span with an empty label list; worst pooling ignores it.
        const none = make("span", "chip chip-none", "no label");
        none.title = "An empty label list: this span does not count in the sample's label";
        labels.appendChild(none);
      }
      line.appendChild(labels);
      if (!span.mine || !page.can_edit) line.appendChild(make("span", "span-annotator", span.annotator));
      body.appendChild(line);
      if (span.source_text) body.appendChild(make("div", "span-source", "↔ " + span.source_text));
      if (span.note) body.appendChild(make("div", "span-note", span.note));
      if (!span.id && span.state === "saving") body.appendChild(make("div", "span-state", "saving…"));
      if (span.state === "failed") {
        const failed = make("div", "span-state failed", "Not saved" + (span.error ? ": " + span.error : "") + " ");
        const retry = make("button", "link", "Retry");
        retry.type = "button";
        retry.dataset.role = "retry";
        failed.appendChild(retry);
        if (!span.id) {
          const discard = make("button", "link", "Discard");
          discard.type = "button";
          discard.dataset.role = "discard";
          failed.appendChild(document.createTextNode(" · "));
          failed.appendChild(discard);
        }
        body.appendChild(failed);
      }
      item.appendChild(body);
      return item;
    });
    spanList.replaceChildren(...items);
    noSpans.hidden = spans.length > 0;
    spanCount.textContent = spans.length ? `(${spans.length})` : "";
  }

  const editor = $('[data-role="span-editor"]');
  const editorParts = buildEditor();

  function buildEditor() {
    const head = make("div", "editor-head");
    head.appendChild(make("span", "editor-title", "Selected span"));
    const text = make("q", "editor-text");
    head.appendChild(text);
    const labels = make("div", "editor-labels");
    const who = make("div", "editor-annotator muted");
    editor.append(head, labels, who);
    let note;
    if (page.can_edit) {
      const noteLabel = make("label", "editor-note");
      const noteTitle = make("span", "muted", "Note (saved as you type) ");
      noteTitle.appendChild(make("kbd", "", "E"));
      noteLabel.appendChild(noteTitle);
      note = make("textarea");
      note.rows = 3;
      note.dataset.role = "note";
      note.placeholder = "Why is this a hallucination? What does the source say?";
      noteLabel.appendChild(note);
      editor.appendChild(noteLabel);
    } else {
      note = make("div", "editor-note-readonly");
      note.dataset.role = "note";
      editor.appendChild(note);
    }
    const source = make("div", "editor-source");
    editor.appendChild(source);
    const actions = make("div", "editor-actions");
    const button = (role, label, hotkey, className) => {
      const el = make("button", className || "", label);
      el.type = "button";
      el.dataset.role = role;
      if (hotkey) {
        el.appendChild(document.createTextNode(" "));
        el.appendChild(make("kbd", "", hotkey));
      }
      actions.appendChild(el);
      return el;
    };
    const link = button("link", "Link selection", "L");
    const unlink = button("unlink", "Unlink source");
    const remove = button("delete", "Delete", "Del", "danger");
    button("deselect", "Close", "Esc");
    editor.appendChild(actions);
    return { text, labels, who, note, source, link, unlink, remove };
  }

  function renderEditor(syncNote) {
    const span = activeSpan();
    editor.hidden = !span;
    if (!span) return;
    const canChange = editable(span);
    editorParts.text.textContent = span.text;
    editorParts.labels.replaceChildren(
      ...leafLabels(span.labels).map((label) => make("span", "chip cat-" + categoryOf([label]), label)),
    );
    editorParts.who.textContent = span.mine && page.can_edit ? "" : "by " + span.annotator;
    editorParts.who.hidden = span.mine && page.can_edit;
    if (editorParts.note.tagName === "TEXTAREA") {
      editorParts.note.disabled = !canChange;
      if (syncNote) editorParts.note.value = span.note;
    } else {
      editorParts.note.textContent = span.note || "No note.";
    }
    editorParts.source.replaceChildren();
    if (span.source_text) {
      editorParts.source.appendChild(make("span", "muted", "Linked source: "));
      editorParts.source.appendChild(make("q", "", span.source_text));
    } else {
      editorParts.source.appendChild(
        make(
          "span",
          "muted",
          canChange
            ? "No source linked: select source text and press L, or click a shaded source sentence."
            : "No source linked.",
        ),
      );
    }
    editorParts.link.hidden = !canChange;
    editorParts.unlink.hidden = !canChange || span.source_start === null;
    editorParts.remove.hidden = !canChange;
  }

  function renderLabelButtons() {
    const span = activeSpan();
    for (const button of root.querySelectorAll("[data-label]")) {
      const pressed = Boolean(span && span.labels.includes(button.dataset.label));
      button.setAttribute("aria-pressed", pressed ? "true" : "false");
    }
  }

  /* Round 2 (reconciliation): the others' round-1 spans, read-only, with whether one of mine agrees. */
  const others = page.others && Array.isArray(page.others.spans) ? page.others : null;
  const othersList = $('[data-role="others-list"]');

  function previewedOther() {
    return others && state.preview !== null ? others.spans[state.preview] || null : null;
  }

  function agreesWithMine(other) {
    const category = categoryOf(other.labels || []);
    return visibleSpans().some(
      (span) => span.mine && span.start < other.end && other.start < span.end && categoryOf(span.labels) === category,
    );
  }

  function renderOthersSummary() {
    const line = $('[data-role="others-summary"]');
    if (!others || !line) return;
    const worst = Object.entries(others.worst_labels || {});
    line.replaceChildren(make("span", "muted", "Round-1 sample labels: "));
    worst.forEach(([name, category], i) => {
      if (i) line.appendChild(document.createTextNode(" · "));
      line.appendChild(make("span", "", `${name}: ${category}`));
    });
    if (others.disagree) line.appendChild(make("span", "badge disagree", "disagreement"));
  }

  function renderOthers() {
    if (!others || !othersList) return;
    const items = others.spans.map((other, i) => {
      const item = make("li", "span-item other-item cat-" + categoryOf(other.labels || []));
      item.dataset.role = "other-span";
      item.dataset.otherIndex = String(i);
      if (state.preview === i) item.classList.add("active");
      item.appendChild(make("span", "span-swatch"));
      const body = make("div", "span-body");
      const line = make("div", "span-line");
      line.appendChild(make("q", "span-text", other.text));
      const labels = make("span", "span-labels");
      for (const label of leafLabels(other.labels || [])) labels.appendChild(make("span", "chip", label));
      line.appendChild(labels);
      line.appendChild(make("span", "span-annotator", other.annotator));
      body.appendChild(line);
      if (other.source_text) body.appendChild(make("div", "span-source", "↔ " + other.source_text));
      if (other.note) body.appendChild(make("div", "span-note", other.note));
      const footer = make("div", "other-footer");
      const agrees = agreesWithMine(other);
      const verdict = make("span", agrees ? "agreement agrees" : "agreement differs",
        agrees ? "✓ one of your spans agrees" : "none of your spans agrees");
      verdict.dataset.agrees = agrees ? "true" : "false";
      footer.appendChild(verdict);
      if (page.can_edit) {
        const copy = make("button", "link", "Copy to mine");
        copy.type = "button";
        copy.dataset.role = "copy";
        footer.appendChild(copy);
      }
      body.appendChild(footer);
      item.appendChild(body);
      return item;
    });
    othersList.replaceChildren(...items);
    $('[data-role="no-others"]').hidden = items.length > 0;
  }

  function copyOther(other) {
    const labels = (other.labels || []).slice();
    const duplicate = visibleSpans().some(
      (span) => span.mine && span.start === other.start && span.end === other.end && sameValue(span.labels, labels),
    );
    if (duplicate) {
      notice("You already have this span with the same labels.", "info");
      return;
    }
    const span = makeSpan({
      start: other.start,
      end: other.end,
      text: other.text,
      labels,
      source_start: other.source_start,
      source_end: other.source_end,
      source_text: other.source_text,
      mine: true,
    });
    state.spans.push(span);
    state.preview = null;
    setActive(span, { keepShading: true });
    enqueue(span, () => createOnServer(span));
  }

  if (othersList) {
    othersList.addEventListener("click", (event) => {
      const item = event.target.closest("[data-other-index]");
      if (!item) return;
      const index = Number(item.dataset.otherIndex);
      const role = event.target.closest("[data-role]");
      if (role && role.dataset.role === "copy") return copyOther(others.spans[index]);
      state.preview = state.preview === index ? null : index;
      renderAll();
    });
  }

  function renderAll(options) {
    renderText("summary");
    renderText("source");
    renderList();
    renderEditor(options && options.syncNote);
    renderLabelButtons();
    renderOthers();
  }

  /* ---------- notices and save status ---------- */

  const noticeEl = $('[data-role="notice"]');
  let noticeTimer = null;
  function notice(message, kind, sticky) {
    clearTimeout(noticeTimer);
    noticeEl.textContent = message;
    noticeEl.className = "notice " + (kind || "info");
    noticeEl.hidden = false;
    if (!sticky) noticeTimer = setTimeout(() => (noticeEl.hidden = true), NOTICE_MS);
  }

  const statusEl = $('[data-role="save-status"]');
  const status = { pending: 0, retrying: 0, error: null };
  const notesWaiting = () => state.spans.some((span) => span.noteTimer !== null);
  const unsavedSpans = () => state.spans.some((span) => span.state === "failed" && !span.deleted);

  function setStatus() {
    let text;
    let kind;
    if (status.retrying > 0) [text, kind] = ["Failed — retrying", "retrying"];
    else if (status.pending > 0 || notesWaiting()) [text, kind] = ["Saving…", "saving"];
    else if (status.error) [text, kind] = ["Failed: " + status.error, "failed"];
    else if (unsavedSpans()) [text, kind] = ["Failed: some changes are not saved", "failed"];
    else [text, kind] = ["Saved", "saved"];
    statusEl.textContent = text;
    statusEl.dataset.state = kind;
    statusEl.title = kind === "failed" ? text + " — use Retry in the span list, or check your connection" : "";
  }

  /* ---------- talking to the API ---------- */

  function csrfToken() {
    try {
      const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
      if (headers["x-csrftoken"]) return headers["x-csrftoken"];
    } catch (error) {
      /* fall back to the cookie */
    }
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function jsonHeaders() {
    return { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() };
  }

  class ClientError extends Error {}

  /* DRF errors look like {"detail": "..."} or {"field": ["message"]}: keep the field name. */
  function errorMessage(data, statusCode) {
    if (!data || typeof data !== "object") return `the server answered ${statusCode}`;
    if (typeof data.detail === "string") return data.detail;
    const parts = [];
    for (const [field, value] of Object.entries(data)) {
      const text = Array.isArray(value) ? value.join(" ") : typeof value === "object" ? JSON.stringify(value) : String(value);
      parts.push(field === "non_field_errors" ? text : `${field}: ${text}`);
    }
    return parts.join("; ") || `the server answered ${statusCode}`;
  }

  /* One write with automatic retries for network errors and 5xx answers. */
  async function send(method, url, body) {
    let retrying = false;
    try {
      for (let attempt = 0; ; attempt++) {
        let response = null;
        try {
          response = await fetch(url, {
            method,
            headers: jsonHeaders(),
            credentials: "same-origin",
            body: body === undefined ? undefined : JSON.stringify(body),
          });
        } catch (error) {
          response = null;
        }
        if (response && response.status < 500) {
          let data = null;
          if (response.status !== 204) {
            try {
              data = await response.json();
            } catch (error) {
              data = null;
            }
          }
          return { status: response.status, ok: response.ok, data };
        }
        if (attempt >= RETRY_DELAYS_MS.length) {
          throw new Error(response ? `server error ${response.status}` : "network error");
        }
        if (!retrying) {
          retrying = true;
          status.retrying++;
          setStatus();
        }
        await sleep(RETRY_DELAYS_MS[attempt]);
      }
    } finally {
      if (retrying) {
        status.retrying--;
        setStatus();
      }
    }
  }

  /* Writes to one span run one after another, so each carries the version the previous returned. */
  function enqueue(span, op) {
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

  const spanUrl = (id) => page.api.span.replace("{id}", String(id));
  const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b);

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
      state.spans = state.spans.filter((other) => other !== span);
      if (state.activeKey === span.key) state.activeKey = null;
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

  async function createOnServer(span) {
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

  async function patchOnServer(span, fields) {
    if (span.deleted) return;
    if (!span.id) {
      // The create failed; its retry sends the whole span, this change included.
      return;
    }
    const sent = Object.assign({}, fields, { version: span.version });
    const result = await send("PATCH", spanUrl(span.id), sent);
    if (result.status === 409) return adoptConflict(span, result.data);
    if (result.status === 404) {
      state.spans = state.spans.filter((other) => other !== span);
      if (state.activeKey === span.key) state.activeKey = null;
      notice("This span no longer exists — it was deleted elsewhere.", "warn");
      renderAll();
      return;
    }
    if (!result.ok) throw new ClientError(errorMessage(result.data, result.status));
    applyServer(span, result.data, fields);
    renderList();
    renderEditor(false);
  }

  /* ---------- span actions ---------- */

  function createSpan(selection, labelName) {
    const index = sides.summary.index;
    const span = makeSpan({
      start: selection.start,
      end: selection.end,
      text: index.slice(selection.start, selection.end),
      labels: [labelName],
      mine: true,
    });
    state.spans.push(span);
    window.getSelection().removeAllRanges();
    setActive(span, { keepShading: true });
    enqueue(span, () => createOnServer(span));
  }

  function changeLabel(span, labelName) {
    if (!editable(span)) return;
    if (sameValue(leafLabels(span.labels), [labelName])) return;
    span.labels = [labelName];
    renderAll();
    enqueue(span, () => patchOnServer(span, { labels: [labelName] }));
  }

  function applyLabel(labelName) {
    if (!page.can_edit) return;
    const selection = readSelection();
    if (selection && selection.side === "summary") return createSpan(selection, labelName);
    const span = activeSpan();
    if (span && editable(span)) return changeLabel(span, labelName);
    notice("Select words in the summary first, then choose a label.", "info");
  }

  function scheduleNote(span) {
    clearTimeout(span.noteTimer);
    span.noteTimer = setTimeout(() => {
      span.noteTimer = null;
      enqueue(span, () => saveNote(span));
    }, NOTE_DEBOUNCE_MS);
    setStatus();
  }

  function flushNote(span) {
    if (!span || span.noteTimer === null) return;
    clearTimeout(span.noteTimer);
    span.noteTimer = null;
    enqueue(span, () => saveNote(span));
  }

  async function saveNote(span) {
    if (span.note === span.serverNote && span.id) return;
    await patchOnServer(span, { note: span.note });
  }

  function setLink(span, start, end) {
    if (!editable(span)) return;
    if (span.source_start === start && span.source_end === end) return;
    span.source_start = start;
    span.source_end = end;
    span.source_text = start === null ? null : sides.source.index.slice(start, end);
    renderAll();
    enqueue(span, () => patchOnServer(span, { source_start: start, source_end: end }));
  }

  function linkSelection() {
    const span = activeSpan();
    if (!span || !editable(span)) {
      notice("Choose a span first (click it), then select source text and press L.", "info");
      return;
    }
    const selection = readSelection();
    if (!selection || selection.side !== "source") {
      notice("Select the supporting or contradicting text in the source first.", "info");
      return;
    }
    window.getSelection().removeAllRanges();
    setLink(span, selection.start, selection.end);
  }

  function deleteSpan(span) {
    if (!editable(span)) return;
    clearTimeout(span.noteTimer);
    span.noteTimer = null;
    span.deleted = true;
    if (state.activeKey === span.key) state.activeKey = null;
    renderAll();
    enqueue(span, async () => {
      if (!span.id) {
        state.spans = state.spans.filter((other) => other !== span);
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
        state.spans = state.spans.filter((other) => other !== span);
        return;
      }
      if (result.status === 409) return adoptConflict(span, result.data);
      span.deleted = false;
      renderAll();
      throw Object.assign(new ClientError(errorMessage(result.data, result.status)), { keepState: true });
    });
  }

  function retrySpan(span) {
    span.state = "saving";
    span.error = null;
    renderList();
    if (!span.id) {
      enqueue(span, () => createOnServer(span));
    } else {
      enqueue(span, () =>
        patchOnServer(span, {
          labels: span.labels,
          note: span.note,
          source_start: span.source_start,
          source_end: span.source_end,
        }),
      );
    }
  }

  function discardSpan(span) {
    state.spans = state.spans.filter((other) => other !== span);
    if (state.activeKey === span.key) state.activeKey = null;
    renderAll();
    setStatus();
  }

  function setActive(span, options) {
    const previous = activeSpan();
    if (previous && previous !== span) flushNote(previous);
    state.activeKey = span ? span.key : null;
    renderAll({ syncNote: true });
    if (span) {
      const item = spanList.querySelector(`[data-span-key="${span.key}"]`);
      if (item && item.scrollIntoView) item.scrollIntoView({ block: "nearest" });
      if (!(options && options.keepShading)) requestSimilarity({ side: "summary", start: span.start, end: span.end });
    }
  }

  function clearAll() {
    window.getSelection().removeAllRanges();
    lastQueried = "";
    simSequence++;
    sides.summary.shading = null;
    sides.source.shading = null;
    state.preview = null;
    if (state.activeKey) setActive(null);
    else renderAll();
    updateSelectionHint(null);
  }

  /* ---------- selection and semantic highlighting ---------- */

  /* The current selection as code-point offsets in one text, trimmed of white space. */
  function readSelection() {
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
    const range = selection.getRangeAt(0);
    const order = ["summary", "source"];
    if (sides.source.el.contains(selection.anchorNode)) order.reverse();
    for (const name of order) {
      const { el, index } = sides[name];
      if (!range.intersectsNode(el)) continue;
      const whole = document.createRange();
      whole.selectNodeContents(el);
      const text = index.text;
      let start =
        range.compareBoundaryPoints(Range.START_TO_START, whole) <= 0
          ? 0
          : offsetIn(el, range.startContainer, range.startOffset);
      let end =
        range.compareBoundaryPoints(Range.END_TO_END, whole) >= 0
          ? text.length
          : offsetIn(el, range.endContainer, range.endOffset);
      while (start < end && /\s/.test(text[start])) start++;
      while (end > start && /\s/.test(text[end - 1])) end--;
      if (end <= start) continue;
      const cpStart = index.toCp(start, false);
      const cpEnd = index.toCp(end, true);
      if (cpEnd <= cpStart) continue;
      return { side: name, start: cpStart, end: cpEnd, text: index.slice(cpStart, cpEnd) };
    }
    return null;
  }

  const hintEl = $(".column-summary .hint");
  const defaultHint = hintEl ? hintEl.textContent : "";
  function updateSelectionHint(selection) {
    if (!hintEl) return;
    if (selection && selection.side === "summary" && page.can_edit) {
      hintEl.textContent = `“${shorten(selection.text, 60)}” selected — press ${hotkeyRange()} or click a label to save it.`;
    } else if (selection && selection.side === "source" && activeSpan() && editable(activeSpan())) {
      hintEl.textContent = "Source text selected — press L to link it to the selected span.";
    } else {
      hintEl.textContent = defaultHint;
    }
  }
  const shorten = (text, max) => (text.length > max ? text.slice(0, max - 1) + "…" : text);
  const hotkeyRange = () => {
    const keys = Object.keys(labelByHotkey);
    return keys.length > 1 ? `${keys[0]}–${keys[keys.length - 1]}` : keys[0] || "a label key";
  };

  const simNote = $('[data-role="similarity-note"]');
  let selectionTimer = null;
  let simSequence = 0;
  let simAbort = null;
  let lastQueried = "";

  function onSelectionMaybeChanged() {
    clearTimeout(selectionTimer);
    selectionTimer = setTimeout(() => {
      const selection = readSelection();
      updateSelectionHint(selection);
      if (selection) requestSimilarity(selection);
    }, SELECTION_DEBOUNCE_MS);
  }

  async function requestSimilarity(selection) {
    const key = `${selection.side}:${selection.start}:${selection.end}`;
    if (key === lastQueried) return;
    lastQueried = key;
    const sequence = ++simSequence;
    if (simAbort) simAbort.abort();
    simAbort = typeof AbortController === "function" ? new AbortController() : null;
    let response;
    try {
      response = await fetch(page.api.similarity, {
        method: "POST",
        headers: jsonHeaders(),
        credentials: "same-origin",
        body: JSON.stringify({ side: selection.side, start: selection.start, end: selection.end }),
        signal: simAbort ? simAbort.signal : undefined,
      });
    } catch (error) {
      if (sequence === simSequence) lastQueried = "";
      return;
    }
    if (sequence !== simSequence) return; // a newer selection was made meanwhile
    if (response.status === 409) {
      simNote.hidden = false;
      lastQueried = "";
      return;
    }
    if (!response.ok) {
      lastQueried = "";
      return;
    }
    const data = await response.json();
    if (sequence !== simSequence) return;
    simNote.hidden = true;
    const target = data.target || (selection.side === "summary" ? "source" : "summary");
    sides[target].shading = {
      byIndex: new Map((data.sentences || []).map((sentence) => [sentence.index, sentence])),
      closest: new Set(data.closest || []),
    };
    applyShading(target);
  }

  /* A mouse drag that starts or ends inside a word takes the whole word, so a
   * hurried drag never saves "owfield's Calder Street Br". The browser's
   * selection is moved too: what is shown is what a label saves. Alt while
   * releasing keeps the exact characters; keyboard selection is always exact. */
  const WORD_CHAR = /[\p{L}\p{N}\p{M}_'\u2019-]/u;
  function snapToWords(event) {
    if (!event.isTrusted || event.altKey || event.button !== 0) return;
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return;
    const container = [sides.summary.el, sides.source.el].find(
      (el) => el.contains(selection.anchorNode) && el.contains(selection.focusNode),
    );
    if (!container) return;
    const text = container.textContent;
    const anchor = offsetIn(container, selection.anchorNode, selection.anchorOffset);
    const focus = offsetIn(container, selection.focusNode, selection.focusOffset);
    const forward = anchor <= focus;
    let start = Math.min(anchor, focus);
    let end = Math.max(anchor, focus);
    const isWord = (at) => at >= 0 && at < text.length && WORD_CHAR.test(text[at]);
    // Only widen a boundary that cuts a word; one already between words stays put.
    if (isWord(start) && isWord(start - 1)) while (isWord(start - 1)) start--;
    if (isWord(end - 1) && isWord(end)) while (isWord(end)) end++;
    if (start === Math.min(anchor, focus) && end === Math.max(anchor, focus)) return;
    const from = pointAt(container, forward ? start : end);
    const to = pointAt(container, forward ? end : start);
    selection.setBaseAndExtent(from.node, from.offset, to.node, to.offset);
  }

  document.addEventListener("selectionchange", onSelectionMaybeChanged);
  document.addEventListener("mouseup", (event) => {
    snapToWords(event);
    onSelectionMaybeChanged();
  });

  const selectionIsCollapsed = () => {
    const selection = window.getSelection();
    return !selection || selection.rangeCount === 0 || selection.isCollapsed;
  };

  sides.summary.el.addEventListener("click", (event) => {
    if (!selectionIsCollapsed()) return;
    const seg = event.target.closest(".seg");
    if (!seg || !seg.dataset.spans) return;
    const keys = seg.dataset.spans.split(" ");
    const at = keys.indexOf(state.activeKey);
    setActive(spanByKey(keys[(at + 1) % keys.length]));
  });

  // A plain click on a shaded source sentence links it to the active span. Wait out
  // the double-click window first: a double click selects a word instead.
  let sentenceClickTimer = null;
  sides.source.el.addEventListener("click", (event) => {
    clearTimeout(sentenceClickTimer);
    const span = activeSpan();
    if (event.detail > 1 || !span || !editable(span) || !selectionIsCollapsed()) return;
    const sentenceEl = event.target.closest("[data-sentence]");
    if (!sentenceEl || !sentenceEl.hasAttribute("data-similarity")) return;
    const sentence = sides.source.sentences[Number(sentenceEl.dataset.sentence)];
    if (!sentence) return;
    sentenceClickTimer = setTimeout(() => {
      if (activeSpan() === span && selectionIsCollapsed()) setLink(span, sentence[0], sentence[1]);
    }, 250);
  });

  /* ---------- controls ---------- */

  // Keep the text selection when a control is pressed with the mouse.
  for (const control of root.querySelectorAll(".labels button, .span-editor button")) {
    control.addEventListener("mousedown", (event) => event.preventDefault());
  }
  for (const button of root.querySelectorAll("[data-label]")) {
    button.addEventListener("click", () => applyLabel(button.dataset.label));
  }

  spanList.addEventListener("click", (event) => {
    const item = event.target.closest("[data-span-key]");
    if (!item) return;
    const span = spanByKey(item.dataset.spanKey);
    if (!span) return;
    const role = event.target.closest("[data-role]");
    if (role && role.dataset.role === "retry") return retrySpan(span);
    if (role && role.dataset.role === "discard") return discardSpan(span);
    if (span.key !== state.activeKey) setActive(span);
  });

  editor.addEventListener("click", (event) => {
    const role = event.target.closest("button[data-role]");
    if (!role) return;
    const span = activeSpan();
    if (role.dataset.role === "deselect") return clearAll();
    if (!span) return;
    if (role.dataset.role === "link") linkSelection();
    else if (role.dataset.role === "unlink") setLink(span, null, null);
    else if (role.dataset.role === "delete") deleteSpan(span);
  });

  if (editorParts.note.tagName === "TEXTAREA") {
    editorParts.note.addEventListener("input", () => {
      const span = activeSpan();
      if (!editable(span)) return;
      span.note = editorParts.note.value;
      scheduleNote(span);
    });
    editorParts.note.addEventListener("blur", () => {
      const span = activeSpan();
      if (span) flushNote(span);
      renderList();
    });
  }

  /* ---------- done, navigation, time spent ---------- */

  let visibleSince = document.hidden ? null : performance.now();
  let visibleMs = 0;
  document.addEventListener("visibilitychange", () => {
    if (document.hidden && visibleSince !== null) {
      visibleMs += performance.now() - visibleSince;
      visibleSince = null;
    } else if (!document.hidden && visibleSince === null) {
      visibleSince = performance.now();
    }
  });
  function takeSeconds() {
    const now = performance.now();
    const total = visibleMs + (visibleSince !== null ? now - visibleSince : 0);
    visibleMs = 0;
    if (visibleSince !== null) visibleSince = now;
    return Math.max(0, Math.min(86400, Math.round(total / 1000)));
  }

  async function settle() {
    for (const span of state.spans) flushNote(span);
    // Loop: a finishing write may have queued another (e.g. a note after a create).
    for (let round = 0; round < 5 && status.pending > 0; round++) {
      await Promise.all(state.spans.map((span) => span.queue));
      if (status.pending > 0) await sleep(50);
    }
  }

  const doneButton = $('[data-role="done"]');
  const doneBadge = $('[data-role="done-badge"]');
  const progress = $('[data-role="progress"]');
  const progressText = $('[data-role="progress-text"]');

  function renderDone() {
    doneBadge.hidden = !state.done;
    if (doneButton) {
      doneButton.replaceChildren(
        document.createTextNode(state.done ? "Mark not done " : "Done "),
        make("kbd", "", "D"),
      );
      doneButton.classList.toggle("primary", !state.done);
      doneButton.title = state.done ? "Mark this sample not done (D)" : "Mark this sample done and go to the next (D)";
    }
    progress.value = state.doneCount;
    progressText.textContent = `${state.doneCount}/${page.total} done`;
  }

  async function toggleDone() {
    if (!page.can_edit || state.busyDone) return;
    state.busyDone = true;
    try {
      await settle();
      if (unsavedSpans()) {
        notice("Some spans are not saved yet: retry them (in the span list) before marking the sample done.", "warn");
        return;
      }
      const done = !state.done;
      const seconds = takeSeconds();
      status.pending++;
      setStatus();
      let result;
      try {
        result = await send("POST", page.api.review, { round: page.round, done, seconds });
      } catch (error) {
        visibleMs += seconds * 1000;
        status.error = error.message;
        return;
      } finally {
        status.pending--;
        setStatus();
      }
      if (!result.ok) {
        visibleMs += seconds * 1000;
        status.error = errorMessage(result.data, result.status);
        setStatus();
        return;
      }
      status.error = null;
      setStatus();
      state.done = done;
      state.doneCount = Math.max(0, Math.min(page.total, state.doneCount + (done ? 1 : -1)));
      renderDone();
      if (done) {
        if (page.next_unfinished_url) {
          window.location.assign(page.next_unfinished_url);
          return;
        }
        notice("Batch complete — every sample is marked done. Thank you!", "ok", true);
      }
    } finally {
      state.busyDone = false;
    }
  }

  async function go(url) {
    if (!url) return;
    await settle();
    window.location.assign(url);
  }

  if (doneButton) doneButton.addEventListener("click", toggleDone);
  for (const [role, url] of [
    ["prev", page.prev_url],
    ["next", page.next_url],
  ]) {
    const link = $(`[data-role="${role}"]`);
    if (!link) continue;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      go(url);
    });
  }

  window.addEventListener("beforeunload", (event) => {
    if (status.pending > 0 || notesWaiting() || unsavedSpans()) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  /* ---------- shortcuts ---------- */

  const overlay = $('[data-role="shortcuts"]');
  const toggleOverlay = (show) => {
    overlay.hidden = show === undefined ? !overlay.hidden : !show;
  };
  $('[data-role="help"]').addEventListener("click", () => toggleOverlay());
  $('[data-role="close-shortcuts"]').addEventListener("click", () => toggleOverlay(false));
  overlay.addEventListener("click", (event) => {
    if (event.target === overlay) toggleOverlay(false);
  });

  function isTyping(target) {
    if (!target || target.nodeType !== 1) return false;
    if (target.isContentEditable) return true;
    return Boolean(target.closest("input, textarea, select, [contenteditable]:not([contenteditable='false'])"));
  }

  /* Chromium does not extend a caret in non-editable text with Shift+Arrow,
   * so keyboard selection in the two texts is done here with Selection.modify. */
  const EXTEND_KEYS = {
    ArrowLeft: ["backward", "character"],
    ArrowRight: ["forward", "character"],
    ArrowUp: ["backward", "line"],
    ArrowDown: ["forward", "line"],
    Home: ["backward", "lineboundary"],
    End: ["forward", "lineboundary"],
  };

  function extendSelection(event) {
    if (!event.shiftKey || event.metaKey || !(event.key in EXTEND_KEYS)) return false;
    const container = [sides.summary.el, sides.source.el].find((el) => el.contains(event.target));
    const selection = window.getSelection();
    if (!container || typeof selection.modify !== "function") return false;
    if (!selection.rangeCount || !container.contains(selection.focusNode)) {
      const start = pointAt(container, 0);
      selection.collapse(start.node, start.offset);
    }
    let [direction, granularity] = EXTEND_KEYS[event.key];
    if ((event.ctrlKey || event.altKey) && granularity === "character") granularity = "word";
    selection.modify("extend", direction, granularity);
    event.preventDefault();
    return true;
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.isComposing) return;
    if (isTyping(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (extendSelection(event)) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    if (!overlay.hidden) {
      if (key === "Escape" || key === "?") {
        event.preventDefault();
        toggleOverlay(false);
      }
      return;
    }
    if (key in labelByHotkey) {
      event.preventDefault();
      if (event.repeat) return;
      applyLabel(labelByHotkey[key]);
      return;
    }
    switch (key) {
      case "?":
        event.preventDefault();
        toggleOverlay(true);
        break;
      case "Escape":
        clearAll();
        break;
      case "Delete":
      case "Backspace": {
        const span = activeSpan();
        if (span && editable(span)) {
          event.preventDefault();
          deleteSpan(span);
        }
        break;
      }
      case "l":
      case "L":
        event.preventDefault();
        linkSelection();
        break;
      case "e":
      case "E": {
        // Straight into the active span's note; Esc leaves it again.
        const span = activeSpan();
        const note = editor.querySelector('textarea[data-role="note"]');
        if (span && editable(span) && note && !editor.hidden) {
          event.preventDefault();
          note.focus();
          note.setSelectionRange(note.value.length, note.value.length);
        }
        break;
      }
      case "d":
      case "D":
        if (event.repeat) break;
        event.preventDefault();
        toggleDone();
        break;
      case "[":
      case "p":
        event.preventDefault();
        go(page.prev_url);
        break;
      case "]":
      case "n":
        event.preventDefault();
        go(page.next_url);
        break;
      default:
        break;
    }
  });

  /* ---------- start ---------- */

  if (!page.embeddings_ready) simNote.hidden = false;
  renderOthersSummary();
  renderAll({ syncNote: true });
  renderDone();
  setStatus();
  root.classList.add("ready");
})();
