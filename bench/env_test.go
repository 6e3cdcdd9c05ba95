package main

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// A Redis server started on a port another server holds exits; startRedis
// sees that the one answering there is not its own and starts again on
// another port. Here the first port is taken by a server this test
// started, which startRedisOn must not take for its own.
func TestStartRedisNotAnother(t *testing.T) {
	needTools(t, "redis-server")
	ctx := context.Background()
	other := &target{}
	t.Cleanup(other.Close)
	if err := other.startRedis(ctx); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(other.RedisAddr)
	p, _ := strconv.Atoi(port)
	mine := &target{}
	t.Cleanup(mine.Close)
	start := time.Now()
	err := mine.startRedisOn(ctx, p, "--save", "", "--appendonly", "no")
	if err == nil {
		t.Fatal("a server on another's port was taken for the one started")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("an exited server was waited for %v", time.Since(start))
	}
	// startRedis itself goes on to a free port and answers.
	if err := mine.startRedis(ctx); err != nil {
		t.Fatal(err)
	}
	if mine.RedisAddr == other.RedisAddr {
		t.Fatal("the same address twice")
	}
	if err := waitOwn(ctx, time.Second, mine.rdb, os.Getpid()); err == nil {
		t.Fatal("this test's process taken for the Redis server")
	}
}
