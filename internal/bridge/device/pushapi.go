package device

import (
	"errors"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"net/http"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The device's Web Push routes (docs/device-api.md). A device reads the
// bridge's VAPID key and reads, sets or removes its own subscription:
// none of the routes names a device, so no device can touch another's.
// A push only opens the page (D6).

// PushReply is GET /api/v1/push: the key to subscribe with and the
// endpoint the bridge holds for this device ("" for none), so the page
// can tell whether its browser's subscription is the one stored.
type PushReply struct {
	PublicKey string `json:"publicKey"`
	Endpoint  string `json:"endpoint"`
}

// PushSubscribed is the reply of POST and DELETE /api/v1/push/subscription.
type PushSubscribed struct {
	Subscribed bool `json:"subscribed"`
}

// pushOff answers a route of Web Push when it is off; a write's refusal
// (c not nil) goes to the audit log like any other.
func (a *API) pushOff(w http.ResponseWriter, c *call) bool {
	if a.o.WebPushKey != "" {
		return false
	}
	if c != nil {
		c.refuse(w, nil, apierr.PushOff)
	} else {
		apierr.Refuse(w, apierr.PushOff)
	}
	return true
}

// setting records a write of the device's own settings that was carried
// out or failed (A1); refusals go through c.refuse.
func (a *API) setting(d store.Device, ev audit.Event) {
	if a.o.Audit != nil {
		a.o.Audit.Setting(d, ev)
	}
}

func (a *API) pushRead(w http.ResponseWriter, r *http.Request) {
	if a.pushOff(w, nil) {
		return
	}
	sub, _ := a.o.Store.PushSubscription(deviceOf(r.Context()).ID)
	replyRead(w, r, PushReply{PublicKey: a.o.WebPushKey, Endpoint: sub.Endpoint})
}

// pushSubscribe stores the device's subscription, decoded strictly
// (webpush.DecodeSubscription), in place of the one it had.
func (a *API) pushSubscribe(w http.ResponseWriter, r *http.Request, c *call) {
	if a.pushOff(w, c) {
		return
	}
	data, err := wire.ReadCapped(r.Body, r.ContentLength, webpush.MaxSubscriptionJSON)
	if err != nil {
		c.refuse(w, nil, apierr.SubscriptionTooLarge)
		return
	}
	sub, err := webpush.DecodeSubscription(data)
	if err != nil {
		c.refuse(w, nil, apierr.BadSubscription, err.Error())
		return
	}
	err = a.o.Store.SetPushSubscription(c.dev.ID, sub)
	switch {
	case errors.Is(err, store.ErrEndpointTaken):
		c.refuse(w, nil, apierr.EndpointTaken)
		return
	case err != nil:
		a.o.Log.Error("could not store a device's push subscription", "device", c.dev.ID, "err", err)
		a.setting(c.dev, audit.PushSubscribe{Service: sub.Origin(), Result: audit.Failed("store-failed: " + err.Error())})
		apierr.Refuse(w, apierr.SubscribeNotSaved)
		return
	}
	a.o.Log.Info("a device turned on notifications", "device", c.dev.ID, "service", sub.Origin())
	a.setting(c.dev, audit.PushSubscribe{Service: sub.Origin(), Result: audit.OK})
	writeJSON(w, http.StatusOK, PushSubscribed{Subscribed: true})
}

// pushUnsubscribe forgets the device's subscription.
func (a *API) pushUnsubscribe(w http.ResponseWriter, r *http.Request, c *call) {
	had, err := a.o.Store.RemovePushSubscription(c.dev.ID)
	if err != nil {
		a.o.Log.Error("could not remove a device's push subscription", "device", c.dev.ID, "err", err)
		a.setting(c.dev, audit.PushUnsubscribe{Result: audit.Failed("store-failed: " + err.Error())})
		apierr.Refuse(w, apierr.UnsubscribeNotSaved)
		return
	}
	if had {
		a.o.Log.Info("a device turned off notifications", "device", c.dev.ID)
	}
	a.setting(c.dev, audit.PushUnsubscribe{Result: audit.OK})
	writeJSON(w, http.StatusOK, PushSubscribed{Subscribed: false})
}
