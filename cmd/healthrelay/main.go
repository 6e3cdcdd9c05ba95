// Command healthrelay relays a gateway's access-log lines to waitroom's
// health endpoint, for the rooms' autopilot (docs/autopilot.md): it
// listens for syslog datagrams on loopback, one line per request the
// gateway passed to the app on a guarded route, and posts them in batches
// with a service key.
//
//	healthrelay -listen 127.0.0.1:5140 -server http://127.0.0.1:8080 -service-key-file key.txt
//
// The nginx recipe (examples/nginx.conf) writes those lines:
//
//	log_format waitroom_health '$waitroom_room $upstream_response_time $upstream_status';
//	access_log syslog:server=127.0.0.1:5140,tag=waitroom_health,nohostname waitroom_health if=$waitroom_room;
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/healthrelay"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "healthrelay:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("healthrelay", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:5140", "UDP address the gateway's syslog lines come to")
	server := fs.String("server", "http://127.0.0.1:8080", "waitroom's base URL (scheme, host and any path prefix, e.g. http://127.0.0.1:8000/waitroom behind the gateway)")
	keyFile := fs.String("service-key-file", "", "file holding a service key (-service-keys of the server); else $WAITROOM_SERVICE_KEY")
	every := fs.Duration("every", 500*time.Millisecond, "how often the samples gathered are sent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key := os.Getenv("WAITROOM_SERVICE_KEY")
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		key = strings.TrimSpace(string(b))
	}
	if key == "" {
		return fmt.Errorf("a service key is required: -service-key-file or WAITROOM_SERVICE_KEY")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	rep := entry.NewReporter(*server, key, &entry.ReporterOptions{Every: *every})
	r, err := healthrelay.Listen(*listen, rep, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("healthrelay: listening", "addr", r.Addr(), "server", *server)
	done := make(chan error, 1)
	go func() { done <- rep.Run(ctx) }()
	err = r.Run(ctx)
	stop()
	<-done
	log.Info("healthrelay: stopped", "dropped", rep.Dropped(), "skipped", r.Skipped())
	return err
}
