// langclass pages: the add form, launching and watching jobs. Talks to the /v1 JSON API and shows
// problem responses (RFC 9457) inline. No framework, no network access beyond this server.
"use strict";

function problemText(p, status) {
  if (!p || typeof p !== "object") return `HTTP ${status}`;
  let text = `${p.title || "Error"}${p.field ? " [" + p.field + "]" : ""}: ${p.detail || ""}`;
  if (status === 401) text += `\nSign in with an API key: /login?next=${encodeURIComponent(location.pathname)}`;
  if (Array.isArray(p.errors)) {
    text += p.errors.map(e => `\n  ${e.field || (e.loc || []).join(".")}: ${e.message || e.msg || ""}`).join("");
  }
  return text;
}

function show(el, text) { el.textContent = text; el.hidden = !text; }

async function send(method, url, body) {
  // X-Langclass-Page: the session cookie of /login counts only with this header (no cross-site writes)
  const init = { method, headers: { "Accept": "application/json", "X-Langclass-Page": "1" }, credentials: "same-origin" };
  if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  const r = await fetch(url, init);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  return { ok: r.ok, status: r.status, data };
}

function alphabetOf(text) {
  if (!text.includes(",")) return Array.from(text);
  return text.split(",").map(s => s.trim());
}

function setupAdd() {
  const form = document.getElementById("add-language");
  if (!form) return;
  const problem = document.getElementById("add-problem");
  const sync = () => {
    const kind = form.querySelector("input[name=kind]:checked").value;
    form.querySelectorAll("[data-kind]").forEach(d => { d.hidden = !d.dataset.kind.split(" ").includes(kind); });
  };
  form.querySelectorAll("input[name=kind]").forEach(r => r.addEventListener("change", sync));
  sync();
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    show(problem, "");
    const f = new FormData(form);
    const kind = f.get("kind");
    const body = {};
    if (kind === "dfa") {
      let text = (f.get("dfa") || "").trim();
      const file = form.querySelector("input[name=dfa_file]").files[0];
      if (file) text = await file.text();
      try { body.dfa = JSON.parse(text); } catch (e) { show(problem, `DFA JSON [dfa]: not valid JSON (${e.message})`); return; }
    } else {
      body[kind] = f.get(kind);
      if ((f.get("alphabet") || "") !== "") body.alphabet = alphabetOf(f.get("alphabet"));
    }
    if (f.get("name")) body.name = f.get("name");
    if (f.get("tags")) body.tags = f.get("tags").split(",").map(s => s.trim()).filter(Boolean);
    const r = await send("POST", "/v1/languages", body);
    const note = document.getElementById("add-note");
    show(note, "");
    if (r.ok && r.data.already_stored && r.data.labels_not_applied) {
      // the language was stored before: its stored name and tags stay; say which of ours were not applied
      const given = r.data.labels_not_applied;
      const parts = [];
      if ("name" in given) parts.push(`name ${JSON.stringify(given.name)} (stored: ${JSON.stringify(r.data.name)})`);
      if ("tags" in given) parts.push(`tags ${JSON.stringify(given.tags)} (stored: ${JSON.stringify(r.data.tags || [])})`);
      note.textContent = "";
      note.append(`This language is already stored; not applied: ${parts.join("; ")}. Its page: `);
      const a = document.createElement("a");
      a.href = `/languages/${r.data.id}`;
      a.id = "add-note-link";
      a.textContent = `/languages/${r.data.id.slice(0, 12)}…`;
      note.append(a, " (change the labels with PATCH /v1/languages/{id}).");
      note.hidden = false;
      return;
    }
    if (r.ok) { window.location.href = `/languages/${r.data.id}`; return; }
    show(problem, problemText(r.data, r.status));
  });
}

function setupLaunch() {
  const form = document.getElementById("launch");
  if (!form) return;
  const problem = document.getElementById("launch-problem");
  const sync = () => {
    const kind = form.querySelector("select[name=kind]").value;
    form.querySelectorAll("[data-kind]").forEach(d => { d.hidden = d.dataset.kind !== kind; });
  };
  form.querySelector("select[name=kind]").addEventListener("change", sync);
  sync();
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    show(problem, "");
    const f = new FormData(form);
    const body = { kind: f.get("kind") };
    if (body.kind === "train") {
      body.encodings = f.getAll("encodings");
      body.profile = f.get("profile");
      const steps = (f.get("max_steps") || "").trim();
      if (steps) {
        const n = Number(steps);
        if (!Number.isInteger(n)) { show(problem, `max steps [overrides.max_steps]: ${steps} is not a whole number`); return; }
        body.overrides = { max_steps: n };
      }
    }
    const r = await send("POST", `/v1/languages/${form.dataset.language}/experiments`, body);
    if (r.ok) { window.location.href = `/jobs/${r.data.id}`; return; }
    show(problem, problemText(r.data, r.status));
  });
}

function setupJob() {
  const status = document.getElementById("job-status");
  if (!status) return;
  const id = status.dataset.job;
  const bar = document.getElementById("job-progress");
  const text = document.getElementById("job-progress-text");
  const problem = document.getElementById("job-problem");
  const cancel = document.getElementById("cancel-job");
  if (cancel) {
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      const r = await send("DELETE", `/v1/jobs/${id}`);
      if (!r.ok) { show(problem, problemText(r.data, r.status)); cancel.disabled = false; return; }
      render(r.data);
    });
  }
  const final = s => ["succeeded", "failed", "cancelled"].includes(s);
  function render(job) {
    status.textContent = job.status + (job.cancel_requested && job.status === "running" ? " (cancel requested)" : "");
    status.className = `status-${job.status}`;
    const p = job.progress || {};
    if (job.status === "succeeded") {
      bar.hidden = false; bar.max = 1; bar.value = 1;
    } else if (typeof p.step === "number" && typeof p.total === "number" && p.total > 0) {
      bar.max = p.total; bar.value = p.step;
    }
    const runs = (typeof p.run === "number" && p.runs) ? ` run ${p.run + 1}/${p.runs}` : "";
    text.textContent = [p.phase || "", runs, (typeof p.step === "number" ? ` step ${p.step}/${p.total}` : "")].join("");
    if (job.error) show(problem, `${job.error.reason || "error"}: ${job.error.detail || job.error.message || ""}`);
    if (final(job.status) && cancel) cancel.hidden = true;
  }
  if (status.dataset.final === "yes") return;
  const poll = async () => {
    const r = await send("GET", `/v1/jobs/${id}`);
    if (r.ok) {
      render(r.data);
      if (final(r.data.status)) { window.location.reload(); return; }
    }
    setTimeout(poll, 1000);
  };
  poll();
}

document.addEventListener("DOMContentLoaded", () => { setupAdd(); setupLaunch(); setupJob(); });
