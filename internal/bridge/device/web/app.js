// Collie's web app: what a paired phone or browser shows.
//
// Rules this module and the ones it imports keep (spec X1, X6, D6, D7):
//  - Agent text becomes DOM text nodes only (textContent, append of a
//    string, attribute values). Nothing here parses HTML; the page's
//    Content-Security-Policy also turns on Trusted Types, so a string
//    handed to an HTML sink would throw.
//  - Links open only web addresses: https for link items, http(s) inside
//    markdown; always rel="noopener noreferrer" and target="_blank".
//  - Writes, pairing included, carry the Collie-Write header and go to
//    this page's own origin;
//    the credential is an HttpOnly cookie this script never sees.
//  - "Always allow" takes a second tap on a separate button, which stays
//    disabled for a moment so a double tap cannot confirm it by accident.
//
// This is the entry module; the others are loaded through its imports.

import { enter, showPairing, takeSecret } from './pairing.js';
import { swURL } from './notify.js';

// ---------------------------------------------------------------- start

window.addEventListener('hashchange', () => {
  const s = takeSecret();
  if (s !== null) showPairing(s);
});

const secret = takeSecret();
if (secret !== null) showPairing(secret);
else enter();

// The installable app: the service worker, whose shell part
// (sw-shell.js) keeps the page's own files so the app opens without the
// bridge and says it cannot be reached. Registered on every load; a
// browser without workers just has no offline page.
if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register(swURL(), { scope: '/' }).catch(() => {});
}
