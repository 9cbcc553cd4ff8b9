package device

import "net/http"

// The 401 codes of the device API. A program may treat both alike (pair
// again); the page words them differently, because only one is a
// revocation.
const (
	// CodeNotPaired: the request carried no credential (a browser never
	// paired here, or whose sign-in was cleared: its cookies removed or
	// expired), or one that matches no device the bridge knows.
	CodeNotPaired = "not-paired"
	// CodeRevoked: the credential is a revoked device's.
	CodeRevoked = "revoked"
)

// unpaired is why a request's credential was refused, as the device API
// says it: a code, a sentence and the fix.
type unpaired struct {
	code, message, hint string
}

// whyUnpaired tells apart the credentials Authenticate refuses: none, a
// revoked device's, one the bridge does not know. device is who it was
// for the audit log (Store.Identify).
func (a *API) whyUnpaired(cred string) (device string, u unpaired) {
	device = a.identify(cred)
	switch device {
	case NoDevice:
		return device, unpaired{CodeNotPaired,
			"this browser sent no sign-in: it was never paired with this bridge, or its sign-in was cleared (its cookies were removed or expired)",
			"pair it again with: collie pair"}
	case UnknownDevice:
		return device, unpaired{CodeNotPaired,
			"this device's sign-in matches no device this bridge knows (its list of paired devices was reset, or the device was revoked long ago)",
			"pair it again with: collie pair"}
	}
	// A revoked device's id (or, in a race with a revoke, a device being
	// revoked this moment).
	return device, unpaired{CodeRevoked, "this device was revoked (collie devices revoke)", "pair it again with: collie pair"}
}

// refuseUnpaired answers a read whose credential was refused.
func (a *API) refuseUnpaired(w http.ResponseWriter, r *http.Request) {
	_, u := a.whyUnpaired(credential(r))
	apiErrorHint(w, http.StatusUnauthorized, u.code, u.message, u.hint)
}
