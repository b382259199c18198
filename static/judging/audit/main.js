/* The audit page, keyboard first: 1-5 score, a agrees with the shown judge, w marks the reasoning wrong,
 * n goes to the note, Enter saves and shows the next output, u brings the last saved verdict back to change it (u
 * again: the one before), b switches blind mode, j and k choose whose quoted passages the texts highlight, ? lists
 * the keys.
 * The keys work wherever the focus is but in a text field (the note); Enter on a button, checkbox, link or
 * summary in focus does that control's own action and never saves (a verdict saved by mistake is changed with u,
 * not by pressing Enter somewhere); Ctrl/Cmd+Enter saves from anywhere. A key pressed while a request is on its way
 * does nothing and says so. The next output opens at the page's top with the focus on its section.
 *
 * The server renders everything (texts with their quoted passages marked at code points, the judges'
 * answers, or in blind mode none of them until a score is given); htmx posts the forms and swaps
 * #audit-view with the answer. These modules only keep the form's hidden inputs in step with the keys
 * (verdict.js, blind.js, keys.js), show the save status and the messages (messages.js), tick the item clock
 * (clock.js), link each reasoning quote with its marks and move the highlight from judge to judge (quotes.js),
 * say when a text goes on below its box (texts.js), keep the saved verdicts u goes back to (back.js) and the
 * choice not saved yet across a reload (choice.js), hold the verdict keys a moment after another output appears
 * (settle.js), and settle the swapped view (htmx.js, view.js). early.js, a classic script in the head, notes the keys
 * pressed before these are wired (the page still loading), which the page then says were not taken.
 * This one wires them, in the order the page's listeners must run, and sets up the first view. */

import { offerChange } from "./back.js";
import { restoreChoice, wireChoiceMemory } from "./choice.js";
import { startClock, tickClock } from "./clock.js";
import { wireHtmx } from "./htmx.js";
import { reportEarlyKeys, wireControls, wireKeys } from "./keys.js";
import { placeMessages, setStatus, showServerMessages } from "./messages.js";
import { wireJudgeCards, wireQuoteLinks } from "./quotes.js";
import { root } from "./state.js";
import { markTexts, wireTexts } from "./texts.js";
import { showChoice } from "./verdict.js";

wireQuoteLinks();
wireTexts();
window.addEventListener("resize", () => {
  markTexts();
  placeMessages();
});
window.addEventListener("load", markTexts); // the texts' final size, fonts and all
tickClock();
wireHtmx();
wireControls();
wireJudgeCards();
wireKeys();
wireChoiceMemory(root);

restoreChoice({ announce: true });
reportEarlyKeys(); // after the restored choice's words: a key pressed during the load wants its answer
showChoice();
offerChange();
startClock();
setStatus(false);
markTexts();
showServerMessages();
root.classList.add("ready");
