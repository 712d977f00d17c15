from sessiontree_protocol.schema import main

raise SystemExit(main())
