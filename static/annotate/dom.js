/* DOM pieces the span and pair labeling pages share: elements built from text only (data never goes through
 * innerHTML). Whether the user is typing lives in static/js/typing.js, as the audit page needs it too. */

export const make = (tag, className, text) => {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = text;
  return el;
};
