/* A modal dialog that behaves as one for the keyboard: opening it moves the focus inside, Tab and Shift+Tab
 * go round its own controls only, and closing it gives the focus (and the text selection) back to where they
 * were, so the page's shortcuts and a started selection carry on as before the dialog. */

const FOCUSABLE = [
  "a[href]",
  "button:not([disabled])",
  "input:not([disabled]):not([type='hidden'])",
  "select:not([disabled])",
  "textarea:not([disabled])",
  "[tabindex]:not([tabindex='-1'])",
].join(", ");

function focusables(container) {
  return [...container.querySelectorAll(FOCUSABLE)].filter((el) => !el.closest("[hidden]") && el.getClientRects().length);
}

function savedSelection() {
  const selection = window.getSelection();
  if (!selection.rangeCount || selection.isCollapsed) return null;
  const { anchorNode, anchorOffset, focusNode, focusOffset } = selection;
  return { anchorNode, anchorOffset, focusNode, focusOffset };
}

/* A click on the dimmed page around the card collapses the selection in the texts: the words the annotator had
 * selected come back with the focus, ready for a label key. */
function restoreSelection(saved) {
  if (!saved || !saved.anchorNode.isConnected || !saved.focusNode.isConnected) return;
  const now = window.getSelection();
  const same =
    now.anchorNode === saved.anchorNode &&
    now.anchorOffset === saved.anchorOffset &&
    now.focusNode === saved.focusNode &&
    now.focusOffset === saved.focusOffset;
  if (!same) now.setBaseAndExtent(saved.anchorNode, saved.anchorOffset, saved.focusNode, saved.focusOffset);
}

/* `overlay` is the element with role="dialog" and the hidden attribute; `initialFocus` the control that takes
 * the focus on opening (the first focusable one when not given). Returns {open, close, toggle, isOpen}. */
export function modalDialog(overlay, { initialFocus = null } = {}) {
  let returnTo = null; // the element that had the focus before opening (null: the page itself)
  let selection = null;

  const isOpen = () => !overlay.hidden;

  function firstStop() {
    const target = initialFocus || focusables(overlay)[0] || overlay;
    if (target === overlay && !overlay.hasAttribute("tabindex")) overlay.setAttribute("tabindex", "-1");
    return target;
  }

  function open() {
    if (isOpen()) return;
    const active = document.activeElement;
    returnTo = active && active !== document.body && !overlay.contains(active) ? active : null;
    selection = savedSelection();
    overlay.hidden = false;
    firstStop().focus({ preventScroll: true });
  }

  function close() {
    if (!isOpen()) return;
    // With nothing to go back to, the focus goes to the page itself (document.body), where the shortcuts listen.
    if (overlay.contains(document.activeElement)) document.activeElement.blur();
    overlay.hidden = true;
    if (returnTo && returnTo.isConnected) returnTo.focus({ preventScroll: true });
    restoreSelection(selection);
    returnTo = null;
    selection = null;
  }

  const toggle = (show) => ((show === undefined ? !isOpen() : show) ? open() : close());

  overlay.addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || !isOpen()) return;
    const controls = focusables(overlay);
    event.preventDefault();
    if (!controls.length) return;
    const at = controls.indexOf(document.activeElement);
    const step = event.shiftKey ? -1 : 1;
    const next = at === -1 ? (event.shiftKey ? controls.length - 1 : 0) : (at + step + controls.length) % controls.length;
    controls[next].focus();
  });

  // Focus that leaves some other way (a click through, a script) is pulled back in while the dialog is open.
  document.addEventListener("focusin", (event) => {
    if (!isOpen() || overlay.contains(event.target)) return;
    firstStop().focus({ preventScroll: true });
  });

  return { open, close, toggle, isOpen };
}
