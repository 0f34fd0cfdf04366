-- The example's own tables: the orders the order service writes, in the same transaction as the
-- outbox row of their confirmation mail (Sumi's outbox table comes from classpath:db/sumi/{vendor}).
-- Plain SQL that PostgreSQL, MariaDB and H2 all accept.
CREATE TABLE orders (
    id             VARCHAR(64)  NOT NULL,
    customer_email VARCHAR(254) NOT NULL,
    total_cents    BIGINT       NOT NULL,
    placed_at      TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT orders_pk PRIMARY KEY (id)
);

-- A line with a quantity of 0 or less is refused: the demo uses it to fail a business write after
-- the outbox append, so that the whole transaction (order, outbox row) rolls back.
CREATE TABLE order_lines (
    order_id         VARCHAR(64) NOT NULL,
    line_no          INTEGER     NOT NULL,
    sku              VARCHAR(64) NOT NULL,
    quantity         INTEGER     NOT NULL,
    unit_price_cents BIGINT      NOT NULL,
    CONSTRAINT order_lines_pk PRIMARY KEY (order_id, line_no),
    CONSTRAINT order_lines_order_fk FOREIGN KEY (order_id) REFERENCES orders (id),
    CONSTRAINT order_lines_quantity_ck CHECK (quantity > 0)
);
