from sessiontree.cli import main

raise SystemExit(main())
