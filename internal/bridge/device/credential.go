package device

import (
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"net/http"

	"github.com/collie-linux/collie/internal/bridge/device/apierr"
)

// The 401 codes of the device API. A program may treat both alike (pair
// again); the page words them differently, because only one is a
// revocation.
const (
	// CodeNotPaired: the request carried no credential (a browser never
	// paired here, or whose sign-in was cleared: its cookies removed or
	// expired), or one that matches no device the bridge knows.
	CodeNotPaired = string(apierr.NotPairedCode)
	// CodeRevoked: the credential is a revoked device's.
	CodeRevoked = string(apierr.RevokedCode)
)

// whyUnpaired tells apart the credentials Authenticate refuses: none, a
// revoked device's, one the bridge does not know. device is who it was
// for the audit log (Store.Identify); why is the refusal's row, the same
// for a read and a write.
func (a *API) whyUnpaired(cred string) (device string, why apierr.Reason) {
	device = a.identify(cred)
	switch device {
	case store.NoDevice:
		return device, apierr.NoCredential
	case store.UnknownDevice:
		return device, apierr.UnknownCredential
	}
	// A revoked device's id (or, in a race with a revoke, a device being
	// revoked this moment).
	return device, apierr.Revoked
}

// refuseUnpaired answers a read whose credential was refused.
func (a *API) refuseUnpaired(w http.ResponseWriter, r *http.Request) {
	_, why := a.whyUnpaired(credential(r))
	apierr.Refuse(w, why)
}
