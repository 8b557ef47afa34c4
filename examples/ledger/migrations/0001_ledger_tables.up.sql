-- The ledger's business tables. IF NOT EXISTS: a database migrated before these tables moved out
-- of Taskgate's own migration 0003 has them already, with this very shape; this adopts them.

-- charge_account: one row per executed charge.
CREATE TABLE IF NOT EXISTS account_charges (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id       text        NOT NULL,
  account         text        NOT NULL,
  cents           bigint      NOT NULL,
  idempotency_key text,
  task_id         uuid,
  created_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT account_charges_cents_check CHECK (cents > 0),
  CONSTRAINT account_charges_account_check CHECK (account <> '')
);
CREATE INDEX IF NOT EXISTS account_charges_account_idx ON account_charges (tenant_id, account, created_at);

-- reserve_inventory: stock per SKU and the reservations taken from it.
CREATE TABLE IF NOT EXISTS inventory (
  tenant_id  text        NOT NULL,
  sku        text        NOT NULL,
  available  integer     NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, sku),
  CONSTRAINT inventory_available_check CHECK (available >= 0)
);
CREATE TABLE IF NOT EXISTS inventory_reservations (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id       text        NOT NULL,
  sku             text        NOT NULL,
  quantity        integer     NOT NULL,
  idempotency_key text,
  task_id         uuid,
  created_at      timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, sku) REFERENCES inventory (tenant_id, sku),
  CONSTRAINT inventory_reservations_quantity_check CHECK (quantity > 0)
);
CREATE INDEX IF NOT EXISTS inventory_reservations_sku_idx ON inventory_reservations (tenant_id, sku, created_at);
