"""joulie-extender: filters and scores nodes by power headroom, cooling stress and profile, from a watch-fed cache of NodeTwin and NodeHardware."""
