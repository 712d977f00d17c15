"""The compatibility suite (issue 31): the agents' own SessionManagers against sessiontree."""
