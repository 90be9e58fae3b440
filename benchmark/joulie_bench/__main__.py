from joulie_bench.cli import main

raise SystemExit(main())
