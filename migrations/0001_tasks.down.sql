DROP TABLE task_events;
DROP TABLE tasks;
