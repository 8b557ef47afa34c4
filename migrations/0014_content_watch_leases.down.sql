DROP TABLE content_watch_leases;
