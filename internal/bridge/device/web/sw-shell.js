// Collie's service worker, the app shell part (served first in /sw.js;
// the push part, sw-push.js, follows and adds the 'push' and
// 'notificationclick' handlers). It keeps a copy of the page's own files
// (SHELL) so the installed app opens without the bridge and says that the
// bridge cannot be reached. It caches nothing else: never /api/ (agents'
// data; the device's cookie goes only there), never a reply that is not
// a plain 200 of this origin. Online, the network answers first, so a new
// bridge's page is used at once; with no answer, or a proxy's 502, 503 or
// 504 for a bridge that is down, the copy is used.
'use strict';
(function () {
  const CACHE = 'collie-shell-1';
  const SHELL = ['/', '/app.js', '/dom.js', '/markdown.js', '/pairing.js', '/live.js', '/view.js', '/cards.js', '/writes.js', '/notify.js', '/app.css', '/phone.css', '/icon.svg', '/icon-192.png', '/manifest.webmanifest'];

  function shellPath(url) {
    const u = new URL(url);
    if (u.origin !== self.location.origin) return null;
    return SHELL.includes(u.pathname) ? u.pathname : null;
  }

  self.addEventListener('install', (event) => {
    // The API goes straight to the network without waking this worker
    // (Service Worker static routing, where the browser has it): its
    // reads, writes and event stream never pass through here, so a busy
    // page is not slowed by a round trip to the worker for each request.
    if (event.addRoutes && self.URLPattern) {
      event.addRoutes([{ condition: { urlPattern: new URLPattern({ pathname: '/api/*' }) }, source: 'network' }]).catch(() => {});
    }
    event.waitUntil((async () => {
      const c = await caches.open(CACHE);
      await c.addAll(SHELL.map((p) => new Request(p, { cache: 'no-cache', credentials: 'omit' })));
      await self.skipWaiting();
    })());
  });

  self.addEventListener('activate', (event) => {
    event.waitUntil((async () => {
      for (const k of await caches.keys()) if (k !== CACHE) await caches.delete(k);
      await self.clients.claim();
    })());
  });

  self.addEventListener('fetch', (event) => {
    const req = event.request;
    const path = req.method === 'GET' ? shellPath(req.url) : null;
    if (!path) return; // the browser fetches it as if there were no worker
    event.respondWith((async () => {
      const copy = () => caches.match(path, { cacheName: CACHE });
      let resp;
      try {
        resp = await fetch(req, { cache: 'no-cache' });
      } catch (e) {
        const hit = await copy();
        if (hit) return hit;
        throw e;
      }
      if (resp.status === 200 && resp.type === 'basic') {
        const keep = resp.clone();
        caches.open(CACHE).then((c) => c.put(path, keep)).catch(() => {});
      } else if (resp.status === 502 || resp.status === 503 || resp.status === 504) {
        const hit = await copy();
        if (hit) return hit;
      }
      return resp;
    })());
  });
})();
