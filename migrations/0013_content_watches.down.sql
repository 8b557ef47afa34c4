DROP TABLE content_watches;
