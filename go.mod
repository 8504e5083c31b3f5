module github.com/openclaw-edge/edge

go 1.26.8

require (
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/knadh/koanf/providers/rawbytes v1.0.0
	github.com/knadh/koanf/v2 v2.4.1
	github.com/rogpeppe/go-internal v1.14.1
	github.com/spf13/cobra v1.10.2
	github.com/titanous/json5 v1.0.0
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sys v0.45.0
)

require (
	github.com/go-viper/mapstructure/v2 v2.4.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/knadh/koanf/maps v0.1.2 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/tools v0.36.0 // indirect
)
