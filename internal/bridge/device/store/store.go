// Package store is the device API's memory of devices: the paired
// devices and the hashes of their credentials (devices.json, 0600, in the
// state folder, written by temp file and rename), the hashes of revoked
// ones, each device's Web Push subscription, and the pairing secrets
// `collie pair` made (in memory only). It holds no credential and no
// secret itself, only their SHA-256.
//
// It knows nothing of HTTP: it imports the Linux primitives (atomicfile),
// the protocol's cleaner and strict decoder, and the Web Push
// subscription type (internal/bridge/push/webpush); never the device
// API's policy, its table of refusals or its handlers.
package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/linux/atomicfile"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Device is one paired device. It holds no secret: only the hash of the
// device's credential.
type Device struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	PairedAt time.Time `json:"pairedAt"`
	LastSeen time.Time `json:"lastSeen,omitzero"`
	CredHash string    `json:"credHash"` // hex SHA-256 of the credential
}

// Store keeps the paired devices in a file, mode 0600.
type Store struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	devices map[string]*Device              // by id
	byHash  map[string]string               // credential hash → id
	saved   time.Time                       // last save, to write LastSeen at most once a minute
	revoked []Revoked                       // newest last, at most KeepRevoked
	push    map[string]webpush.Subscription // by device id (pushsubs.go)
}

// Revoked is a device that was revoked: the hash of its credential is
// kept so that a later request with it is recorded as that device's, not
// as an unknown one's. It opens nothing.
type Revoked struct {
	ID        string    `json:"id"`
	CredHash  string    `json:"credHash"`
	RevokedAt time.Time `json:"revokedAt"`
}

// Devices a refusal names when no paired device asked (Identify).
const (
	NoDevice      = ""        // the request carried no credential
	UnknownDevice = "unknown" // a credential that matches no device, paired or revoked
)

// KeepRevoked is how many revoked devices the store remembers.
const KeepRevoked = 64

type storeFile struct {
	Version int       `json:"version"`
	Devices []*Device `json:"devices"`
	Revoked []Revoked `json:"revoked,omitempty"`
	// Push holds each device's Web Push subscription, by device id.
	Push map[string]webpush.Subscription `json:"push,omitempty"`
}

// OpenStore reads the devices file at path; a missing file is no devices.
func OpenStore(path string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{path: path, now: now, devices: map[string]*Device{}, byHash: map[string]string{}, push: map[string]webpush.Subscription{}}
	atomicfile.RemoveStale(path) // a save killed midway leaves a temp file of credential hashes
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the devices file: %w", err)
	}
	var f storeFile
	if err := jsonstrict.Unmarshal(data, &f); err != nil || f.Version != 1 {
		why := "its version is not 1"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("the devices file %s is damaged (%s); pair your devices again after moving it away", path, why)
	}
	for _, d := range f.Devices {
		s.devices[d.ID] = d
		s.byHash[d.CredHash] = d.ID
	}
	s.revoked = f.Revoked
	s.loadPush(f.Push)
	return s, nil
}

// Add pairs a new device and returns it with its credential, which is shown
// to the device once and never stored.
func (s *Store) Add(name string) (Device, string, error) {
	name, _ = sanitize.Line(name, sanitize.LabelBytes)
	if name == "" {
		name = "device"
	}
	cred, err := random(32)
	if err != nil {
		return Device{}, "", err
	}
	id, err := random(9)
	if err != nil {
		return Device{}, "", err
	}
	d := &Device{ID: "d-" + id, Name: name, PairedAt: s.now().UTC(), CredHash: hashCred(cred)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devices[d.ID] = d
	s.byHash[d.CredHash] = d.ID
	if err := s.saveLocked(); err != nil {
		delete(s.devices, d.ID)
		delete(s.byHash, d.CredHash)
		return Device{}, "", err
	}
	return *d, cred, nil
}

// Authenticate returns the device whose credential this is.
func (s *Store) Authenticate(cred string) (Device, bool) {
	if cred == "" {
		return Device{}, false
	}
	h := hashCred(cred)
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byHash[h]
	if !ok {
		return Device{}, false
	}
	d := s.devices[id]
	d.LastSeen = s.now().UTC()
	if s.now().Sub(s.saved) > time.Minute {
		s.saveLocked() // last seen is a hint: a failed save loses nothing else
	}
	return *d, true
}

// Identify names who a credential that Authenticate refused belongs to,
// for the audit log: a revoked device's id, UnknownDevice, or NoDevice
// when there is no credential. It never returns the credential.
func (s *Store) Identify(cred string) string {
	if cred == "" {
		return NoDevice
	}
	h := hashCred(cred)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byHash[h]; ok {
		return id
	}
	for _, r := range s.revoked {
		if r.CredHash == h {
			return r.ID
		}
	}
	return UnknownDevice
}

// Get returns the device with id.
func (s *Store) Get(id string) (Device, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return Device{}, false
	}
	return *d, true
}

// Revoke removes a device; its credential stops working at once, and its
// push subscription is dropped with it.
func (s *Store) Revoke(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return fmt.Errorf("no device with id %s; see: collie devices", id)
	}
	before := s.revoked
	sub, hadSub := s.push[id]
	delete(s.devices, id)
	delete(s.byHash, d.CredHash)
	delete(s.push, id)
	s.revoked = append(s.revoked[max(0, len(s.revoked)-KeepRevoked+1):len(s.revoked):len(s.revoked)],
		Revoked{ID: id, CredHash: d.CredHash, RevokedAt: s.now().UTC()})
	if err := s.saveLocked(); err != nil {
		s.devices[id], s.byHash[d.CredHash], s.revoked = d, id, before
		if hadSub {
			s.push[id] = sub
		}
		return err
	}
	return nil
}

// List returns the devices, oldest first.
func (s *Store) List() []Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Device, 0, len(s.devices))
	for _, d := range s.devices {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PairedAt.Before(out[j].PairedAt) })
	return out
}

func (s *Store) saveLocked() error {
	f := storeFile{Version: 1, Devices: make([]*Device, 0, len(s.devices)), Revoked: s.revoked, Push: s.push}
	for _, d := range s.devices {
		f.Devices = append(f.Devices, d)
	}
	sort.Slice(f.Devices, func(i, j int) bool { return f.Devices[i].ID < f.Devices[j].ID })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, data); err != nil {
		return fmt.Errorf("save the devices file: %w", err)
	}
	s.saved = s.now()
	return nil
}

func hashCred(cred string) string {
	sum := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(sum[:])
}

// random returns n random bytes, base64url without padding.
func random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
