/* Offsets exchanged with the server are Unicode code points, end-exclusive;
 * the DOM counts UTF-16 code units. Every offset is converted at the border,
 * so emoji and other non-BMP characters keep spans exact. */

export class TextIndex {
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
