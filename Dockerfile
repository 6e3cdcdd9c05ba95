# The release image: nothing but the static waitroom binary, the CA bundle
# (for rediss:// and an https -upstream) and a numeric non-root user.
#
# The build context is not the repository: `make image` builds the binary
# on the host (CGO_ENABLED=0) and lays it out with the host's CA bundle in
# .build/image/, so this build pulls no base image and needs no network:
#
#   make image          # buildah bud -f Dockerfile .build/image
#
# To build from source inside a Go image instead, see Dockerfile.multistage.
FROM scratch

COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY waitroom /waitroom

# A container must listen on all its interfaces; the flag default is
# loopback. Every flag also reads WAITROOM_<NAME>, and a flag given wins.
ENV WAITROOM_ADDR=0.0.0.0:8080

# No /etc/passwd in scratch, so the user is numeric (runAsNonRoot can check
# a number). The server writes nothing to disk: a read-only root works.
USER 65532:65532
EXPOSE 8080

# Orchestrators probe GET /healthz (the process is alive) and GET /readyz
# (Redis and its pub/sub answer); there is no shell here for a HEALTHCHECK.
ENTRYPOINT ["/waitroom"]
