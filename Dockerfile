# kubecode's container image: the static kubecode binary, the sandbox's
# worker binary beside it (kubecode-worker: scripts run in its processes)
# and the native TypeScript compiler it type-checks scripts with, on a
# distroless base, as a non-root user. Build:  docker build -t kubecode .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY internal/controlplane/build/tsgo/go.mod internal/controlplane/build/tsgo/go.sum internal/controlplane/build/tsgo/
RUN go mod download && cd internal/controlplane/build/tsgo && go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/kubecode ./cmd/kubecode-worker
RUN cd internal/controlplane/build/tsgo && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/tsgo github.com/microsoft/typescript-go/cmd/tsgo

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kubecode /out/kubecode-worker /out/tsgo /usr/local/bin/
ENV KUBECODE_TSGO=/usr/local/bin/tsgo
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kubecode"]
# Each request acts with its own bearer token; --auth none would lend the
# server's identity to anyone who reaches the port.
CMD ["serve", "--http=0.0.0.0:8080", "--stateless", "--auth=passthrough"]
