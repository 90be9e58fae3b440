// Command otelcol is Joulie's custom OpenTelemetry Collector for the simulated cluster and the
// component tests: only the receivers, processors, exporters and extensions listed in
// components() are compiled in. Built by ci/tools/bootstrap-tools.sh (see ci/tools/README.md);
// the versions are pinned in versions.env (OTELCOL_VERSION, OTELCOL_CONTRIB_VERSION).
package main

import (
	"fmt"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// version is stamped by the bootstrap script (-X main.version=<OTELCOL_VERSION without "v">).
var version = "dev"

// components lists every factory this collector knows. Keep it small: each component adds
// build time to a fresh CI machine's bootstrap.
func components() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap(
		otlpreceiver.NewFactory(),
		prometheusreceiver.NewFactory(),
	); err != nil {
		return f, fmt.Errorf("receivers: %w", err)
	}
	if f.Processors, err = otelcol.MakeFactoryMap(
		batchprocessor.NewFactory(),
	); err != nil {
		return f, fmt.Errorf("processors: %w", err)
	}
	if f.Exporters, err = otelcol.MakeFactoryMap(
		otlphttpexporter.NewFactory(),
		debugexporter.NewFactory(),
		prometheusexporter.NewFactory(),
	); err != nil {
		return f, fmt.Errorf("exporters: %w", err)
	}
	if f.Extensions, err = otelcol.MakeFactoryMap(
		healthcheckextension.NewFactory(),
	); err != nil {
		return f, fmt.Errorf("extensions: %w", err)
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "Joulie custom OpenTelemetry Collector",
			Version:     version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(),
					envprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
				DefaultScheme: "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "otelcol: %v\n", err)
		os.Exit(1)
	}
}
