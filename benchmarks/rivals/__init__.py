"""The benchmark's Transformer in the rival frameworks, each in its own module and
imported only when that framework is installed."""
