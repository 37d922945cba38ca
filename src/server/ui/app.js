// locr web UI: pick or drop documents, OCR them with POST /v1/ocr (streamed, with progress events
// and the page images the model read), show each page beside its Markdown as pages finish.
// Every URL is relative to the page's <base> (the server's --root-path).
"use strict";

(function () {
  const R = window.locrRender;
  const $ = (id) => document.getElementById(id);
  const KEY = "locr.apiKey";
  const state = { files: [], docs: new Set() };

  // --- API key: asked for once (on the first 401), kept in this tab's session storage ---

  function apiKey() { return sessionStorage.getItem(KEY) || ""; }

  function askKey() {
    const dialog = $("key-dialog");
    $("key-input").value = apiKey();
    return new Promise((resolve) => {
      dialog.addEventListener("close", function onClose() {
        dialog.removeEventListener("close", onClose);
        if (dialog.returnValue === "ok" && $("key-input").value) {
          sessionStorage.setItem(KEY, $("key-input").value);
          resolve(true);
        } else {
          resolve(false);
        }
      });
      dialog.showModal();
      $("key-input").focus();
    });
  }

  async function api(path, init = {}, retry = true) {
    const headers = new Headers(init.headers || {});
    if (apiKey()) headers.set("Authorization", "Bearer " + apiKey());
    const res = await fetch(path, { ...init, headers });
    if (res.status === 401 && retry && (await askKey())) return api(path, init, false);
    return res;
  }

  // The server's message from an OpenAI-style error body, or the status line.
  async function errorMessage(res) {
    try {
      const j = await res.json();
      if (j && j.error && j.error.message) return j.error.message;
    } catch (e) { /* not JSON */ }
    return "HTTP " + res.status + " " + res.statusText;
  }

  function notice(text) {
    const n = $("notice");
    n.textContent = text || "";
    n.hidden = !text;
  }

  // --- status strip: /version (device), /v1/models (model), /metrics (load) ---

  async function refreshStatus() {
    try {
      const m = R.parseMetrics(await (await fetch("metrics")).text());
      const count = (v) => (v === undefined ? "–" : String(Math.round(v)));  // Prometheus prints 3.0
      $("st-running").textContent = count(m["vllm:num_requests_running"]);
      $("st-waiting").textContent = count(m["vllm:num_requests_waiting"]);
      const kv = m["vllm:kv_cache_usage_perc"];
      $("st-kv").textContent = kv === undefined ? "–" : (100 * kv).toFixed(1) + " %";
    } catch (e) {
      $("st-running").textContent = $("st-waiting").textContent = $("st-kv").textContent = "offline";
    }
  }

  async function loadServerInfo() {
    try {
      const v = await (await fetch("version")).json();
      $("st-device").textContent = v.device || "–";
    } catch (e) { $("st-device").textContent = "–"; }
    try {
      const res = await api("v1/models", {}, false);
      if (res.status === 401) { $("st-model").textContent = "API key needed"; return; }
      const j = await res.json();
      $("st-model").textContent = (j.data && j.data[0] && j.data[0].id) || "–";
    } catch (e) { $("st-model").textContent = "–"; }
  }

  // --- choosing files ---

  function setFiles(list) {
    state.files = Array.from(list);
    const ul = $("chosen");
    ul.replaceChildren(...state.files.map((f) => {
      const li = document.createElement("li");
      li.textContent = f.name + " (" + Math.max(1, Math.round(f.size / 1024)) + " KiB)";
      return li;
    }));
    $("start").disabled = state.files.length === 0;
  }

  function download(name, text, type) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      const t = document.createElement("textarea");
      t.value = text;
      document.body.appendChild(t);
      t.select();
      document.execCommand("copy");
      t.remove();
    }
    const was = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = was; }, 1200);
  }

  function baseName(name) { return name.replace(/\.[^.]+$/, "") || "document"; }

  // --- one document ---

  class Doc {
    constructor(file, opts) {
      this.file = file;
      this.opts = opts;
      this.pages = new Map();  // page number -> { el, result }
      this.controller = new AbortController();
      this.summary = null;
      this.el = $("doc-template").content.firstElementChild.cloneNode(true);
      this.el.querySelector(".doc-name").textContent = file.name;
      this.bar = this.el.querySelector(".doc-bar");
      this.bar.setAttribute("aria-label", "Pages done in " + file.name);
      this.stats = this.el.querySelector(".doc-stats");
      this.cancelButton = this.el.querySelector(".cancel");
      this.cancelButton.addEventListener("click", () => this.cancel());
      this.el.querySelector(".dl-md").addEventListener("click", () => download(baseName(file.name) + ".md", this.markdown(), "text/markdown"));
      this.el.querySelector(".dl-json").addEventListener("click", () => download(baseName(file.name) + ".json", this.json(), "application/json"));
      this.el.dataset.state = "running";
      $("docs").prepend(this.el);
      state.docs.add(this);
    }

    setState(s, text) {
      this.el.dataset.state = s;
      if (text !== undefined) this.stats.textContent = text;
      if (s !== "running") this.cancelButton.disabled = true;
    }

    fail(message) {
      const e = this.el.querySelector(".doc-error");
      e.textContent = message;
      e.hidden = false;
      this.setState("error");
      for (const p of this.pages.values()) if (!p.result) p.el.dataset.state = "cancelled";
    }

    cancel() {
      this.cancelled = true;
      this.controller.abort();
    }

    markdown() {
      if (this.summary && typeof this.summary.document === "string") return this.summary.document + "\n";
      return [...this.pages.values()].filter((p) => p.result).sort((a, b) => a.result.page - b.result.page)
        .map((p) => p.result.text.replace(/\s+$/, "")).join("\n\n") + "\n";
    }

    json() {
      const pages = [...this.pages.values()].filter((p) => p.result).map((p) => {
        const { image, ...rest } = p.result;  // the page images are the server's rendering, not results
        return rest;
      }).sort((a, b) => a.page - b.page);
      return JSON.stringify({ ...(this.summary || {}), file: this.file.name, pages }, null, 2) + "\n";
    }

    page(number) {
      let p = this.pages.get(number);
      if (p) return p;
      const el = $("page-template").content.firstElementChild.cloneNode(true);
      el.dataset.page = number;
      el.dataset.state = "waiting";
      el.querySelector(".page-title").textContent = "Page " + number;
      el.querySelector(".page-state").textContent = "waiting";
      const bar = el.querySelector(".page-bar");
      bar.setAttribute("aria-label", "Progress of page " + number);
      if (this.opts.max_tokens) bar.max = this.opts.max_tokens;
      else bar.removeAttribute("value");  // indeterminate until done
      p = { el, result: null, raw: false };
      el.querySelector(".toggle").addEventListener("click", () => this.toggleRaw(p));
      el.querySelector(".copy").addEventListener("click", (ev) => copyText(p.result.text, ev.currentTarget));
      el.querySelector(".dl-page").addEventListener("click", () =>
        download(baseName(this.file.name) + "-page-" + number + ".md", p.result.text + "\n", "text/markdown"));
      // Keep pages in document order whatever order they finish in.
      const container = this.el.querySelector(".pages");
      const after = [...container.children].find((c) => Number(c.dataset.page) > number);
      container.insertBefore(el, after || null);
      this.pages.set(number, p);
      return p;
    }

    toggleRaw(p) {
      p.raw = !p.raw;
      const b = p.el.querySelector(".toggle");
      b.textContent = p.raw ? "Show rendered" : "Show raw";
      b.setAttribute("aria-pressed", String(p.raw));
      p.el.querySelector(".raw").hidden = !p.raw;
      p.el.querySelector(".rendered").hidden = p.raw;
    }

    onProgress(e) {
      this.bar.max = Math.max(1, e.pages_selected);
      this.bar.value = e.pages_done;
      const rate = e.elapsed_s > 0 ? e.completion_tokens / e.elapsed_s : 0;
      this.stats.textContent = e.pages_done + " / " + e.pages_selected + " pages · " + rate.toFixed(1) + " tokens/s · " +
        R.formatSeconds(e.elapsed_s) + (e.format ? " · " + e.format + ", " + e.page_count + " page(s)" : "");
      for (const s of e.pages) {
        const p = this.page(s.page);
        if (p.result) continue;
        p.el.dataset.state = s.state;
        p.el.querySelector(".page-state").textContent = s.state === "running" ? s.completion_tokens + " tokens" : s.state;
        const bar = p.el.querySelector(".page-bar");
        if (this.opts.max_tokens) bar.value = Math.min(s.completion_tokens, this.opts.max_tokens);
      }
    }

    onPage(r) {
      const p = this.page(r.page);
      p.result = r;
      const el = p.el;
      el.dataset.state = r.error ? "error" : "done";
      const t = r.timings || {};
      el.querySelector(".page-state").textContent = r.error ? "failed: " + r.error
        : r.usage.completion_tokens + " tokens · " + r.finish_reason + " · " + R.formatSeconds(t.total_s);
      const bar = el.querySelector(".page-bar");
      bar.max = 1;
      bar.value = 1;
      const conf = r.confidence;
      if (conf && typeof conf.score === "number") {
        const c = el.querySelector(".page-confidence");
        c.textContent = "confidence " + (100 * conf.score).toFixed(1) + " %" +
          (conf.tokens_below_threshold ? " · " + conf.tokens_below_threshold + " uncertain token(s)" : "");
        c.title = "geometric mean token probability; lowest token log-probability " + conf.min_logprob.toFixed(2) +
          "; tokens under probability " + conf.threshold + ": " + conf.tokens_below_threshold + " of " + conf.tokens;
        c.hidden = false;
      }
      const sp = r.speculative;  // decoded with drafts from the page's own text layer
      if (sp && sp.drafted > 0) {
        const s = el.querySelector(".page-drafts");
        s.textContent = "drafts " + sp.accepted + " / " + sp.drafted + " accepted";
        s.title = "speculative decoding from the page's text layer: " + sp.accepted + " of " + sp.drafted +
          " drafted tokens accepted, each one a decode step saved; the text is the same as without drafts";
        s.hidden = false;
      }
      el.querySelector(".raw").textContent = r.text;
      el.querySelector(".rendered").innerHTML = R.renderMarkdown(r.text);
      for (const b of el.querySelectorAll(".page-actions button")) b.disabled = false;
      this.showImage(p, r);
    }

    showImage(p, r) {
      const frame = p.el.querySelector(".image-frame");
      frame.replaceChildren();
      if (!r.image) {
        frame.textContent = "no page image";
        return;
      }
      const img = document.createElement("img");
      img.src = r.image;
      img.alt = "Page " + r.page + " of " + this.file.name + " as the model read it";
      if (r.dimensions) { img.width = r.dimensions.width; img.height = r.dimensions.height; }
      frame.appendChild(img);
      if (!this.opts.boxes) return;
      // Grounding pages carry the model's own output (with every block's box) as `raw`; their
      // `text` is the Markdown made from the blocks.
      R.extractBoxes(r.raw != null ? r.raw : r.text).boxes.forEach((b, i) => {
        const d = document.createElement("div");
        d.className = "box";
        d.dataset.box = i;
        d.style.left = b.x1 / 10 + "%";
        d.style.top = b.y1 / 10 + "%";
        d.style.width = (b.x2 - b.x1) / 10 + "%";
        d.style.height = (b.y2 - b.y1) / 10 + "%";
        d.title = b.label + " " + (i + 1);
        const tag = document.createElement("span");
        tag.textContent = String(i + 1);
        d.appendChild(tag);
        frame.appendChild(d);
      });
    }

    async run() {
      const form = new FormData();
      form.append("file", this.file, this.file.name);
      form.append("stream", "true");
      form.append("progress", "true");
      form.append("include_page_image", "true");
      form.append("order", "completion");
      form.append("output", this.opts.output);
      form.append("tables_to_markdown", String(this.opts.tables));
      if (this.opts.pages) form.append("pages", this.opts.pages);
      if (this.opts.max_tokens) form.append("max_tokens", String(this.opts.max_tokens));
      if (this.opts.dpi) form.append("dpi", String(this.opts.dpi));
      if (this.opts.grounding) form.append("mode", "grounding");
      if (this.opts.temperature !== null) form.append("temperature", String(this.opts.temperature));
      const t0 = performance.now();
      try {
        const res = await api("v1/ocr", { method: "POST", body: form, signal: this.controller.signal });
        if (!res.ok) {
          this.fail(await errorMessage(res));
          return;
        }
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        const sse = R.sseParser();
        let finished = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const e of sse.feed(decoder.decode(value, { stream: true }))) {
            if (e === "[DONE]") { finished = true; continue; }
            if (e.error) { this.fail(e.error.message || String(e.error)); return; }
            if (e.object === "ocr.progress") this.onProgress(e);
            else if (e.object === "ocr.page") this.onPage(e);
            else if (e.object === "ocr.document") this.summary = e;
          }
        }
        if (!finished) { this.fail("the server closed the connection before the document was finished"); return; }
        const s = this.summary || {};
        const secs = (performance.now() - t0) / 1000;
        const tokens = s.usage ? s.usage.completion_tokens : 0;
        this.bar.max = 1;
        this.bar.value = 1;
        this.setState("done", (s.pages_selected || this.pages.size) + " page(s) · " + tokens + " tokens · " +
          (tokens / Math.max(secs, 1e-3)).toFixed(1) + " tokens/s · " + R.formatSeconds(secs));
        this.el.querySelector(".dl-md").disabled = false;
        this.el.querySelector(".dl-json").disabled = false;
      } catch (err) {
        if (this.cancelled) {
          this.setState("cancelled", "cancelled");
          for (const p of this.pages.values()) if (!p.result) {
            p.el.dataset.state = "cancelled";
            p.el.querySelector(".page-state").textContent = "cancelled";
          }
        } else {
          this.fail("cannot reach the server: " + err.message);
        }
      } finally {
        this.cancelButton.disabled = true;
        if (this.pages.size && [...this.pages.values()].some((p) => p.result)) {
          this.el.querySelector(".dl-md").disabled = false;
          this.el.querySelector(".dl-json").disabled = false;
        }
        refreshStatus();
      }
    }
  }

  function options() {
    const pages = $("opt-pages").value.trim();
    const max = $("opt-max-tokens").value.trim();
    const dpi = $("opt-dpi").value.trim();
    const temperature = $("opt-temperature").value.trim();
    return {
      pages,
      max_tokens: max ? Number(max) : 0,
      dpi: dpi ? Number(dpi) : 0,
      temperature: temperature === "" ? null : Number(temperature),
      output: $("opt-output").value,
      tables: $("opt-tables").checked,
      boxes: $("opt-boxes").checked,
      grounding: $("opt-grounding").checked,
    };
  }

  function start(ev) {
    ev.preventDefault();
    notice("");
    const opts = options();
    if (!R.validPages(opts.pages)) {
      notice("Pages must look like 1,3-5 or 10- (1-based page numbers).");
      $("opt-pages").focus();
      return;
    }
    if (opts.max_tokens && !(Number.isInteger(opts.max_tokens) && opts.max_tokens > 0)) {
      notice("Max tokens must be a whole number above 0.");
      $("opt-max-tokens").focus();
      return;
    }
    if (opts.dpi && !(opts.dpi >= 10 && opts.dpi <= 1200)) {
      notice("PDF resolution must be between 10 and 1200 dpi.");
      $("opt-dpi").focus();
      return;
    }
    if (opts.temperature !== null && !(opts.temperature >= 0 && opts.temperature <= 2)) {
      notice("Temperature must be between 0 and 2.");
      $("opt-temperature").focus();
      return;
    }
    for (const f of state.files) new Doc(f, opts).run();
    setFiles([]);
    $("files").value = "";
  }

  function init() {
    const drop = $("drop");
    drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => {
      e.preventDefault();
      drop.classList.remove("over");
      if (e.dataTransfer && e.dataTransfer.files.length) setFiles(e.dataTransfer.files);
    });
    $("files").addEventListener("change", (e) => setFiles(e.target.files));
    $("job").addEventListener("submit", start);
    $("clear").addEventListener("click", () => {
      for (const d of state.docs) if (d.el.dataset.state !== "running") { d.el.remove(); state.docs.delete(d); }
    });
    $("key-button").addEventListener("click", async () => { if (await askKey()) loadServerInfo(); });
    loadServerInfo();
    refreshStatus();
    setInterval(refreshStatus, 2000);
  }

  window.locrApp = { state, Doc };
  init();
})();
