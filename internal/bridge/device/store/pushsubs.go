package store

import (
	"errors"
	"fmt"
	"sort"

	"github.com/collie-linux/collie/internal/bridge/push/webpush"
)

// A paired device has at most one Web Push subscription: the one its
// browser made for this bridge's key. It is kept in devices.json beside
// the device and goes with it: revoking the device drops it (Revoke).
// The Store is the webpush provider's source of subscriptions.

var _ webpush.Subscriptions = (*Store)(nil)

// ErrEndpointTaken is SetPushSubscription's error when another paired
// device holds the same endpoint: a device never takes over another's
// subscription. The page then asks its browser for a new one.
var ErrEndpointTaken = errors.New("this browser's push subscription belongs to another paired device")

// SetPushSubscription stores sub as device id's subscription, in place of
// the one it had. sub must have passed webpush.DecodeSubscription.
func (s *Store) SetPushSubscription(id string, sub webpush.Subscription) error {
	if err := sub.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.devices[id]; !ok {
		return fmt.Errorf("no device with id %s", id)
	}
	for other, o := range s.push {
		if other != id && o.Endpoint == sub.Endpoint {
			return ErrEndpointTaken
		}
	}
	old, had := s.push[id]
	s.push[id] = sub
	if err := s.saveLocked(); err != nil {
		if had {
			s.push[id] = old
		} else {
			delete(s.push, id)
		}
		return err
	}
	return nil
}

// RemovePushSubscription forgets device id's subscription; it reports
// whether there was one.
func (s *Store) RemovePushSubscription(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.push[id]
	if !had {
		return false, nil
	}
	delete(s.push, id)
	if err := s.saveLocked(); err != nil {
		s.push[id] = old
		return false, err
	}
	return true, nil
}

// PushSubscription returns device id's subscription.
func (s *Store) PushSubscription(id string) (webpush.Subscription, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.push[id]
	return sub, ok
}

// PushTargets implements webpush.Subscriptions: every paired device's
// subscription, by device id.
func (s *Store) PushTargets() []webpush.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]webpush.Target, 0, len(s.push))
	for id, sub := range s.push {
		out = append(out, webpush.Target{Device: id, Sub: sub})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// DropPushSubscription implements webpush.Subscriptions: the push service
// said device id's subscription is gone. A newer subscription (another
// endpoint) stays.
func (s *Store) DropPushSubscription(id, endpoint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.push[id]
	if !ok || old.Endpoint != endpoint {
		return nil
	}
	delete(s.push, id)
	if err := s.saveLocked(); err != nil {
		s.push[id] = old
		return err
	}
	return nil
}

// loadPush keeps the stored subscriptions of devices that are paired and
// that still pass validation; the rest the device makes again.
func (s *Store) loadPush(stored map[string]webpush.Subscription) {
	for id, sub := range stored {
		if _, ok := s.devices[id]; ok && sub.Validate() == nil {
			s.push[id] = sub
		}
	}
}
