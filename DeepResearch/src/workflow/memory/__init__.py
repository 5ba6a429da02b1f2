"""The research workflow's use of memory: node hooks, nested loop sessions, tool-run tracking,
the ExecutionHistory bridge and the run's memory lifecycle. It imports the memory package;
the memory package never imports this one."""
