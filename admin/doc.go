// Package admin is the admin API under /api/v1/admin: labelled keys and
// their roles (each route's least role in Routes), a room's settings as
// the API shows them and their partial updates (from package settings),
// previews of a change's effects in words, the audit trail, and minting
// invite codes and visitor credentials.
//
// It is built from the dependencies it declares (Options: the room
// store, the keys and rooms file in force, the instance's defaults, the
// signer, the gateway's session end) and mounted on a router with Mount.
package admin
