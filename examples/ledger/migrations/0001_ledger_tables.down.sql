DROP TABLE inventory_reservations;
DROP TABLE inventory;
DROP TABLE account_charges;
