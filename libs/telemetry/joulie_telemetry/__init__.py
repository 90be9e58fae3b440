"""The telemetry vocabulary: metric names, units and attributes (`vocabulary`), OTLP builders (`otlp`)."""
