// Site search when the built docs are opened from disk (file://), with no network.
//
// Material runs its search in a Web Worker, and browsers refuse `new Worker(url)` for
// file:// pages. Material's offline plugin would load a polyfill from unpkg.com; this file
// replaces it (mkdocs.yml: extra.polyfills) so that nothing is fetched: on file:// pages,
// `Worker` becomes a stand-in that runs the worker script in a hidden iframe and passes
// messages both ways. It does only what the search worker needs: postMessage, "message"
// events and terminate(). Served over http(s), the browser's own Worker is left alone.
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  // The iframe's side: the worker script sees `postMessage` and "message" events as in a
  // worker. Messages go out through the parent window; they come in through `__deliver`,
  // which the parent calls directly (the srcdoc frame shares the page's origin).
  var frameScript =
    "window.postMessage = function (data) { parent.postMessage({ __frameWorker: data }, '*'); };" +
    "window.__deliver = function (data) {" +
    "  window.dispatchEvent(new MessageEvent('message', { data: data }));" +
    "};";

  function FrameWorker(url) {
    var target = new EventTarget();
    var frame = document.createElement("iframe");
    var pending = [];
    var ready = false;
    var src = new URL(url, location.href).href;

    frame.hidden = true;
    frame.srcdoc =
      "<!doctype html><script>" + frameScript + "<\/script>" +
      '<script src="' + src.replace(/"/g, "&quot;") + '"><\/script>';
    frame.addEventListener("load", function () {
      ready = true;
      pending.splice(0).forEach(deliver);
    });
    (document.body || document.documentElement).appendChild(frame);

    function deliver(data) {
      frame.contentWindow.__deliver(data);
    }

    window.addEventListener("message", function (event) {
      if (event.source !== frame.contentWindow || !event.data) return;
      var message = new MessageEvent("message", { data: event.data.__frameWorker });
      if (typeof target.onmessage === "function") target.onmessage(message);
      target.dispatchEvent(message);
    });

    target.postMessage = function (data) {
      if (ready) deliver(data);
      else pending.push(data);
    };
    target.terminate = function () {
      frame.remove();
    };
    return target;
  }

  window.Worker = FrameWorker;
})();
