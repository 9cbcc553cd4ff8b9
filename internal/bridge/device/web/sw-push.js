// Collie's service worker: the notifications part (docs/device-api.md,
// Notifications). A push shows a notification; a tap on it opens the app,
// or focuses it, at the question's address. Nothing here answers (D6): a
// notification has no buttons, and this worker sends nothing to the bridge.
// The payload's text is drawn by the system as text; its address is used
// only when it is this app's own origin.
'use strict';
(function () {
  const TITLE_MAX = 256;
  const BODY_MAX = 4096;
  const TAG = /^collie-[A-Za-z0-9_-]{1,64}$/;

  function str(v, max) {
    return typeof v === 'string' ? v.slice(0, max) : '';
  }

  // ownURL is raw when it is an address of this app's origin, else the
  // app's start page: a push never opens another site.
  function ownURL(raw) {
    try {
      const u = new URL(typeof raw === 'string' && raw ? raw : '/', self.location.origin);
      if (u.origin === self.location.origin) return u.href;
    } catch (e) {
      // not a URL
    }
    return new URL('/', self.location.origin).href;
  }

  self.addEventListener('push', (event) => {
    let data = null;
    try {
      data = event.data ? event.data.json() : null;
    } catch (e) {
      data = null;
    }
    if (!data || typeof data !== 'object') data = {};
    const options = {
      body: str(data.body, BODY_MAX),
      tag: typeof data.tag === 'string' && TAG.test(data.tag) ? data.tag : 'collie',
      icon: '/icon.svg',
      data: { url: ownURL(data.url) },
    };
    event.waitUntil(self.registration.showNotification(str(data.title, TITLE_MAX) || 'Collie', options));
  });

  self.addEventListener('notificationclick', (event) => {
    event.notification.close();
    const url = ownURL(event.notification.data && event.notification.data.url);
    event.waitUntil((async () => {
      const wins = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      for (const w of wins) {
        if (new URL(w.url).origin !== self.location.origin) continue;
        const win = await w.focus();
        if (win && win.url !== url) {
          try {
            await win.navigate(url);
          } catch (e) {
            // A window this worker does not control cannot be sent on;
            // it is focused, which is what matters.
          }
        }
        return;
      }
      await self.clients.openWindow(url);
    })());
  });
})();
