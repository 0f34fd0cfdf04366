package io.sumi.faults.app;

import io.sumi.outbox.Outbox;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Creates this slot's orders at the configured rate, each one committed with its outbox message
 * in one transaction. A restarted instance resumes after the last committed order of its slot; a
 * failed transaction (database down, commit outcome unknown) is retried from what is committed.
 */
@Component
public class OrderGenerator implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(OrderGenerator.class);

    private final JdbcClient jdbc;
    private final Outbox outbox;
    private final TransactionTemplate transactions;
    private final FaultAppProperties properties;
    private volatile boolean running;
    private Thread thread;

    OrderGenerator(JdbcClient jdbc, Outbox outbox, TransactionTemplate transactions, FaultAppProperties properties) {
        this.jdbc = jdbc;
        this.outbox = outbox;
        this.transactions = transactions;
        this.properties = properties;
    }

    @Override
    public void start() {
        running = true;
        thread = new Thread(this::run, "order-generator");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void stop() {
        running = false;
        if (thread != null) {
            thread.interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    private void run() {
        if (properties.goFile() != null) {
            while (running && !Files.exists(Path.of(properties.goFile()))) {
                pause(100);
            }
        }
        long intervalNanos = 1_000_000_000L / Math.max(1, properties.rate());
        int next = -1;
        long due = System.nanoTime();
        while (running) {
            try {
                if (next < 0) {
                    next = jdbc.sql("SELECT COALESCE(MAX(seq), 0) + 1 FROM orders WHERE slot = ?")
                            .param(properties.slot())
                            .query(Integer.class)
                            .single();
                }
                if (next > properties.orders()) {
                    log.info("Slot {}: all {} orders created", properties.slot(), properties.orders());
                    return;
                }
                String orderId = "o-" + properties.slot() + "-" + next;
                int seq = next;
                transactions.executeWithoutResult(status -> {
                    jdbc.sql("INSERT INTO orders (id, slot, seq) VALUES (?, ?, ?)")
                            .params(orderId, properties.slot(), seq)
                            .update();
                    outbox.append(orderId, properties.topic(), orderId);
                });
                next++;
            } catch (RuntimeException ex) {
                log.warn("Slot {}: order not created ({}); retrying", properties.slot(), ex.toString());
                next = -1; // the commit may have happened: read what is committed again
                pause(500);
            }
            due += intervalNanos;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait);
            } else if (wait < -1_000_000_000L) {
                due = System.nanoTime(); // behind after an outage: do not burst
            }
        }
    }

    private static void pause(long millis) {
        LockSupport.parkNanos(millis * 1_000_000L);
    }
}
