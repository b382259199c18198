/* Keys pressed while the audit page is still loading. The page's keys are wired by main.js, a module that runs only
 * once the document is parsed and its modules are fetched; a key pressed before that reached no listener and was
 * lost without a word (a reload, or the page a plain form post leads back to). This classic script, loaded in the
 * head before anything else of the page, notes those keys; main.js says they were not taken (earlyKeys.report) and
 * stops the noting. Keys typed in a text field, and keys the page does not use, are not noted. */

(() => {
  const PAGE_KEYS = /^([1-5]|[awnubjkAWNUBJK?]|Enter|Escape)$/;
  const pressed = [];

  function typing(target) {
    if (!target || target.nodeType !== 1) return false;
    if (target.isContentEditable || target.matches("textarea, select")) return true;
    return target.matches("input") && !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
  }

  function note(event) {
    if (event.repeat || event.altKey || !PAGE_KEYS.test(event.key)) return;
    const ctrl = event.ctrlKey || event.metaKey;
    if (ctrl && event.key !== "Enter") return;
    if (!ctrl && typing(event.target)) return;
    const name = ctrl ? "Ctrl+Enter" : event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (!pressed.includes(name)) pressed.push(name);
  }

  document.addEventListener("keydown", note, true);

  window.faithlabAuditEarlyKeys = {
    /* The page's keys are wired: stop noting, and return the keys pressed before (each once, in order). */
    report() {
      document.removeEventListener("keydown", note, true);
      return pressed.splice(0);
    },
  };
})();
