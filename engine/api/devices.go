package api

import "time"

// Paths of pairing and paired devices (docs/design.md §9). The pair endpoints
// are served on the TLS listener to devices that are not paired yet (and
// nothing else is); the code endpoint only on the local socket.
const (
	PathPairStart    = "/v1/pair/start"     // POST PairStart → PairReply (TLS only)
	PathPairFinish   = "/v1/pair/finish"    // POST PairFinish → PairDone (TLS only)
	PathPairCode     = "/v1/pair/code"      // POST → PairCode: a new code (local socket only)
	PathDevices      = "/v1/devices"        // GET → []Device
	PathDeviceRevoke = "/v1/devices/revoke" // POST DeviceRef → Device (as it was)
	PathDeviceRename = "/v1/devices/rename" // POST DeviceRef{ID, Name} → Device
	PathDeviceRole   = "/v1/devices/role"   // POST DeviceRef{ID, Role} → Device (operators and the local socket; not a device's own)
	PathWhoAmI       = "/v1/whoami"         // GET → WhoAmI: how the gateway sees this connection
)

// Pairing errors' codes (in Error.Code).
const (
	CodePairFailed = "pair_failed"  // wrong code, or someone in the middle: the keys did not match
	CodePairLocked = "pair_locked"  // 5 wrong tries: make a new code on the box
	CodeNoCode     = "no_pair_code" // no code is active (expired, used, never made)
	CodeNotPaired  = "not_paired"   // a TLS client that is not (or no longer) a paired device
)

// PairCode is a pairing code made by the gateway: single use, valid until
// ExpiresAt, locked after 5 wrong tries.
type PairCode struct {
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// PairStart opens a pairing: the device's CPace message, and the name it
// wants to be known by.
type PairStart struct {
	Name string `json:"name"`
	MsgA []byte `json:"msgA"`
}

// PairReply is the gateway's CPace answer.
type PairReply struct {
	Session string `json:"session"`
	MsgB    []byte `json:"msgB"`
}

// PairFinish proves the device derived the same key (it knew the code and
// saw the gateway's own certificate).
type PairFinish struct {
	Session string `json:"session"`
	Confirm []byte `json:"confirm"`
}

// PairDone proves the same from the gateway's side and tells the device
// how it was recorded.
type PairDone struct {
	Confirm     []byte `json:"confirm"`
	Device      Device `json:"device"`
	GatewayName string `json:"gatewayName"`
	GatewayID   string `json:"gatewayId"`
}

// Device is a paired device as the gateway records it.
type Device struct {
	ID          string    `json:"id"` // short device id (hash of its public key)
	Name        string    `json:"name"`
	Fingerprint string    `json:"fingerprint"` // hex SHA-256 of its public key
	Role        string    `json:"role"`        // operator | viewer
	CreatedAt   time.Time `json:"createdAt"`
	LastSeen    time.Time `json:"lastSeen,omitzero"`
	Connected   bool      `json:"connected,omitempty"`
}

// Device roles: an operator may do everything the local CLI does; a viewer
// only reads (the routes Routes lists as Read). The local socket is always
// an operator. Pairing makes an operator; `openclaw devices role` changes
// it.
const (
	RoleOperator = "operator"
	RoleViewer   = "viewer"
)

// DeviceRef names a device by its id (or a unique prefix of it, or its
// name) for revoke, rename and role.
type DeviceRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"` // rename: the new name
	Role string `json:"role,omitempty"` // role: RoleOperator or RoleViewer
}

// WhoAmI is how the gateway sees a connection.
type WhoAmI struct {
	Transport   string  `json:"transport"` // socket | tls
	Device      *Device `json:"device,omitempty"`
	GatewayName string  `json:"gatewayName"`
	GatewayID   string  `json:"gatewayId"`
}
