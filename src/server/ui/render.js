// locr web UI: the pure parts (no DOM state, no network): Markdown + math to safe HTML, the boxes
// LightOnOCR models write into their output, the server-sent events of /v1/ocr, Prometheus text.
// Exposed as window.locrRender (the browser tests call these directly too).
"use strict";

(function () {
  // Math spans, longest delimiters first: $$..$$ and \[..\] are display math, \(..\) and $..$
  // inline. A $ opens inline math only when not escaped and not followed by a space, and closes
  // only when not preceded by one (so "$5 and $6" stays text).
  const MATH = /(\$\$[\s\S]+?\$\$)|(\\\[[\s\S]+?\\\])|(\\\([\s\S]+?\\\))|((?<![\\$])\$(?![\s$])(?:\\.|[^$\n\\])+?(?<!\s)\$(?!\d))/g;

  // Placeholders use private-use code points, which Markdown leaves alone.
  function splitMath(text) {
    const spans = [];
    const out = text.replace(MATH, (m) => {
      let tex, display;
      if (m.startsWith("$$")) { tex = m.slice(2, -2); display = true; }
      else if (m.startsWith("\\[")) { tex = m.slice(2, -2); display = true; }
      else if (m.startsWith("\\(")) { tex = m.slice(2, -2); display = false; }
      else { tex = m.slice(1, -1); display = false; }
      spans.push({ tex, display, source: m });
      return "\uE000M" + (spans.length - 1) + "\uE001";
    });
    return { text: out, spans };
  }

  function renderTex(span) {
    if (typeof katex === "undefined") return escapeHtml(span.source);
    try {
      return katex.renderToString(span.tex, { displayMode: span.display, throwOnError: false, output: "htmlAndMathml" });
    } catch (e) {
      return escapeHtml(span.source);
    }
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }

  // Boxes in a page's text, coordinates normalised to 0..1000 on both axes:
  //  - LightOnOCR-2-1B-bbox: "![image](image_N.png)x1,y1,x2,y2" (figures)
  //  - LightOnOCR-3 grounding: "![label](x1,y1,x2,y2) text" (every block)
  const BOX_AFTER = /!\[([^\]\n]*)\]\(([^)\s]*)\)[ \t]*(\d{1,4})\s*,\s*(\d{1,4})\s*,\s*(\d{1,4})\s*,\s*(\d{1,4})/g;
  const BOX_INSIDE = /!\[([^\]\n]*)\]\(\s*(\d{1,4})\s*,\s*(\d{1,4})\s*,\s*(\d{1,4})\s*,\s*(\d{1,4})\s*\)/g;

  function box(label, x1, y1, x2, y2) {
    const c = [x1, y1, x2, y2].map((v) => Math.max(0, Math.min(1000, Number(v))));
    return { label: label || "box", x1: Math.min(c[0], c[2]), y1: Math.min(c[1], c[3]), x2: Math.max(c[0], c[2]), y2: Math.max(c[1], c[3]) };
  }

  // Returns { boxes: [...], text: the text with each box marker replaced by a numbered reference }.
  function extractBoxes(text) {
    const boxes = [];
    let out = text.replace(BOX_AFTER, (m, label, target, x1, y1, x2, y2) => {
      boxes.push(box(label || target, x1, y1, x2, y2));
      return "\uE000B" + (boxes.length - 1) + "\uE001";
    });
    out = out.replace(BOX_INSIDE, (m, label, x1, y1, x2, y2) => {
      boxes.push(box(label, x1, y1, x2, y2));
      return "\uE000B" + (boxes.length - 1) + "\uE001";
    });
    return { boxes, text: out };
  }

  // Markdown (GFM tables, HTML tables as the model writes them) and math to HTML that is safe to
  // insert: DOMPurify removes scripts, event handlers and javascript: URLs the model (or a
  // document crafted to make it write them) may produce. Images are dropped: the model's image
  // references name files that do not exist.
  function renderMarkdown(text) {
    const boxed = extractBoxes(text);
    const math = splitMath(boxed.text);
    let html = typeof marked !== "undefined" ? marked.parse(math.text, { gfm: true, breaks: false, mangle: false, headerIds: false })
      : "<pre>" + escapeHtml(math.text) + "</pre>";
    html = html.replace(/\uE000M(\d+)\uE001/g, (m, i) => renderTex(math.spans[Number(i)]));
    html = html.replace(/\uE000B(\d+)\uE001/g, (m, i) => {
      const b = boxed.boxes[Number(i)];
      return '<span class="box-ref" data-box="' + i + '">' + escapeHtml(b.label) + " " + (Number(i) + 1) + "</span>";
    });
    if (typeof DOMPurify === "undefined") return escapeHtml(text);
    return DOMPurify.sanitize(html, { FORBID_TAGS: ["img", "style", "form", "input", "button", "iframe"], ADD_ATTR: ["data-box"] });
  }

  // Server-sent events from a fetch body: feed() takes decoded text, returns the complete events'
  // data (JSON parsed; "[DONE]" as the string).
  function sseParser() {
    let buf = "";
    return {
      feed(chunk) {
        buf += chunk.replace(/\r\n/g, "\n");
        const events = [];
        let at;
        while ((at = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
          if (!data) continue;
          events.push(data === "[DONE]" ? data : JSON.parse(data));
        }
        return events;
      },
    };
  }

  // Prometheus text to { name: value } (first series of each name; labels ignored).
  function parseMetrics(text) {
    const out = {};
    for (const line of text.split("\n")) {
      if (!line || line.startsWith("#")) continue;
      const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
      if (m && !(m[1] in out)) out[m[1]] = Number(m[3]);
    }
    return out;
  }

  // The /v1/ocr page selection grammar: "1,3-5,10-", "-4"; empty means every page.
  function validPages(s) {
    s = s.replace(/\s+/g, "");
    if (!s) return true;
    return s.split(",").every((part) => /^(\d+|\d+-\d*|-\d+)$/.test(part) && !/^0|-0/.test(part));
  }

  function formatSeconds(s) {
    if (!(s >= 0)) return "–";
    if (s < 60) return s.toFixed(1) + " s";
    const m = Math.floor(s / 60);
    return m + " min " + Math.round(s - 60 * m) + " s";
  }

  window.locrRender = { renderMarkdown, extractBoxes, splitMath, sseParser, parseMetrics, validPages, formatSeconds, escapeHtml };
})();
