// "Copy" buttons (data-copy="<selector of a field>") put the field's value on the clipboard.
// The field is selected too, so it can be copied by hand where the clipboard is not allowed (plain http).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.querySelector(button.dataset.copy);
  if (!field) return;
  field.select();
  const done = () => { button.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, () => { if (document.execCommand("copy")) done(); });
  } else if (document.execCommand("copy")) {
    done();
  }
});
