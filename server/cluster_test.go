package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// TestClusterEndToEnd runs a server on a three-node Redis Cluster with each
// client: join, push over WS and SSE, admission, order.
func TestClusterEndToEnd(t *testing.T) {
	cl := redistest.StartCluster(t)
	url := "redis://" + cl.Addrs[0] + "?addr=" + strings.Join(cl.Addrs[1:], "&addr=")
	for _, client := range clientKinds {
		t.Run(client, func(t *testing.T) {
			ts := startServer(t, nil, client, func(c *config) { c.Redis, c.Cluster, c.Capacity.Batch = url, true, 2 })
			room := "cl-" + client
			a, b := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
			a.join(room)
			b.join(room)
			wa, sb := dialWS(t, ts.URL, room, a.cred), dialSSE(t, ts.URL, room, b.cred)
			waitfor.Until(t, 5*time.Second, "first states", func() bool { return len(wa.messages()) > 0 && len(sb.messages()) > 0 })
			for {
				res, err := ts.q.Admit(context.Background(), room)
				if err != nil {
					t.Fatal(err)
				}
				if res.Taken {
					break
				}
			}
			waitfor.Until(t, 10*time.Second, "admitted pushed over the cluster's pub/sub", func() bool {
				return wa.count("admitted") == 1 && sb.count("admitted") == 1
			})
			var tok string
			for _, m := range wa.messages() {
				if m.Status == "admitted" {
					tok = m.Token
				}
			}
			if r := a.do("POST", "/api/v1/rooms/"+room+"/orders", "", "Authorization", "Bearer "+tok); r.Code != 201 {
				t.Fatalf("order: %d %s", r.Code, r.Raw)
			}
		})
	}
}
