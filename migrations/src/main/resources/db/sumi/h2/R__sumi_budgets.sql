-- Sumi fleet budgets (H2 2.x, for tests and local development). See the PostgreSQL script.
CREATE TABLE IF NOT EXISTS sumi_budget_limit (
    budget_name      VARCHAR(200)             NOT NULL,
    spend_limit      DOUBLE PRECISION         NOT NULL,
    configured_limit DOUBLE PRECISION         NOT NULL,
    updated_at       TIMESTAMP WITH TIME ZONE NOT NULL,
    CONSTRAINT sumi_budget_limit_pk PRIMARY KEY (budget_name)
);

CREATE TABLE IF NOT EXISTS sumi_budget_spend (
    budget_name  VARCHAR(200)     NOT NULL,
    window_start BIGINT           NOT NULL,
    spent        DOUBLE PRECISION NOT NULL,
    CONSTRAINT sumi_budget_spend_pk PRIMARY KEY (budget_name, window_start)
);
