// Package demo is the demo protected endpoint: POST
// /api/v1/rooms/{room}/orders, an order placed with an entry token on a
// simulated database pool. It stands for what a shop's own API would be
// behind the waiting room, so that the effect of a herd (and of admitting
// in measured batches instead) is visible on one machine: every order
// holds one of a fixed number of database slots for a service time, and
// an order that finds no slot free in time is refused with 503
// db_timeout.
//
// A deployment mounts it only when asked to (the server's -demo flag);
// its series (waitroom_orders_total, waitroom_db_slots*) exist only then.
package demo
