/* Back and Forward on pages whose filter form pushes its query into the URL (hx-push-url).
 *
 * htmx restores such a page from a snapshot of its HTML. HTML keeps the `selected`, `checked` and `value`
 * attributes the server rendered, not the choices made since (those live in the fields' state), so after a Back
 * the table shows the filtered rows while the form shows the filters the page was first served with, and the
 * next change would send those and lose the filter. The URL is what the table was made from: on every history
 * restore, each form marked data-sync-query takes its fields from it.
 *
 * A parameter the URL lacks or leaves empty gives the field the value the server uses then: its data-default
 * attribute, or "" ("any"); of a radio group, the button marked data-default. A checkbox is checked when the URL
 * carries its value, as a browser sends only checked boxes. A value a select does not offer (a bad URL, which the
 * page reports) leaves the select as it is. Setting a field this way fires no change event: it sends no request. */

(() => {
  "use strict";

  const NOT_SENT = new Set(["button", "submit", "reset", "image", "file"]);

  /** The value a field takes when the URL has no value for it. */
  function defaultOf(field) {
    return field.dataset.default ?? "";
  }

  function offers(select, value) {
    return Array.from(select.options).some((option) => option.value === value);
  }

  /** Give one field its value from the URL's values of its name; `index`: which of the same-named fields it is. */
  function syncField(field, values, index) {
    if (field.type === "checkbox") {
      field.checked = values.includes(field.value);
    } else if (field.type === "radio") {
      field.checked = values.length ? values[0] === field.value : field.hasAttribute("data-default");
    } else if (field instanceof HTMLSelectElement && field.multiple) {
      for (const option of field.options) option.selected = values.includes(option.value);
    } else {
      const value = values[index] || defaultOf(field);
      if (field instanceof HTMLSelectElement && !offers(field, value)) return;
      field.value = value;
    }
  }

  function syncForm(form, query) {
    const seen = new Map(); // name -> how many fields of that name took a value, for repeated names
    for (const field of form.elements) {
      if (!field.name || NOT_SENT.has(field.type)) continue;
      const index = seen.get(field.name) ?? 0;
      seen.set(field.name, index + 1);
      syncField(field, query.getAll(field.name), index);
    }
  }

  document.addEventListener("htmx:historyRestore", () => {
    const query = new URLSearchParams(window.location.search);
    for (const form of document.querySelectorAll("form[data-sync-query]")) syncForm(form, query);
  });
})();
