/* The question asked before a judge run or a triage starts (judges page, a synthetic set's page).
 *
 * Those forms post through htmx with hx-confirm, as removing a member or revoking a token does, so every
 * confirmation looks and behaves alike (the browser's own dialog: Enter confirms, Escape cancels). Their question
 * depends on what is chosen in the form, so the server writes it with a placeholder, "{n sample|samples}", on the
 * chosen judge's option (data-confirm) or on the form, and the count of samples on the chosen scope's or batch's
 * option (data-samples), or on the form. Just before htmx handles the submit (this listener runs first, in the
 * capture phase), the form's hx-confirm becomes that question with the count put in. With no judge or no batch
 * chosen yet the form asks nothing: the server refuses it and says which field is missing. */

(() => {
  "use strict";

  const PLACEHOLDER = /\{n ([^|{}]+)\|([^{}]+)\}/g;

  /** "1 sample", "12 samples". */
  function counted(count, one, many) {
    return `${count} ${count === 1 ? one : many}`;
  }

  /** The first chosen option of the form's selects that carries `attribute` (in the form's order), or null. */
  function chosenWith(form, attribute) {
    for (const select of form.querySelectorAll("select")) {
      const option = select.selectedOptions[0];
      if (option && option.hasAttribute(attribute)) return option;
    }
    return null;
  }

  /** The question for what is chosen now, or "" when the form cannot start anything as it is. */
  function question(form) {
    const asking = chosenWith(form, "data-confirm") || form;
    const words = asking.dataset.confirm || "";
    const counting = chosenWith(form, "data-samples") || form;
    const samples = Number.parseInt(counting.dataset.samples ?? "", 10);
    if (!words || Number.isNaN(samples)) return "";
    return words.replace(PLACEHOLDER, (_, one, many) => counted(samples, one, many));
  }

  document.addEventListener(
    "submit",
    (event) => {
      const form = event.target;
      if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-confirm-counted")) return;
      const asked = question(form);
      if (asked) form.setAttribute("hx-confirm", asked);
      else form.removeAttribute("hx-confirm");
    },
    true,
  );
})();
