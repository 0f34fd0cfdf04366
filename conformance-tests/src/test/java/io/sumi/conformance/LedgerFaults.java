package io.sumi.conformance;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Array;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * The ledger's database, made unreachable for one message key at a time: the "ledger down"
 * scenarios' fault injection. Each kind's application imports it; it wraps the application's
 * {@link DataSource} bean (everything uses the wrapper: the ledger, the transaction manager, the
 * handlers' JDBC effects), and a scenario arms a {@link Fault} for its own key, so the other
 * listeners of the shared context never see it.
 *
 * <p>A fault fails, with the {@link SQLTransientConnectionException} (SQLSTATE {@code 08006}) a
 * lost connection gives:
 * <ul>
 *   <li>{@link Point#STATEMENTS}: every statement on the ledger table that binds the key, as a
 *   parameter or inside an array (the batch claims, completions and releases bind arrays), before
 *   it reaches the database: claims, reads, completions, releases, renewals;</li>
 *   <li>{@link Point#AFTER_CLAIM}: the same, claims excepted;</li>
 *   <li>{@link Point#COMMIT}: the commit of a transaction in which such a statement ran (the
 *   statement itself succeeds): the transaction is rolled back on the database first, as a
 *   connection lost before its commit leaves it.</li>
 * </ul>
 * A fault fires for its first {@code times} hits or until {@link Fault#clear()}, and counts what it
 * fired: a scenario asserts that it did (its proof that it could fail). The catalogue's own reads
 * ({@link Ledger}) go around the faults ({@link #bypass}). The Redis ledger's calls fail through
 * {@link RedisLedgerFaults}, which arms its faults here.
 */
public final class LedgerFaults implements BeanPostProcessor {

    /** Where a fault strikes. */
    public enum Point {
        /** Every ledger statement that binds the key. */
        STATEMENTS,
        /**
         * Every ledger statement that binds the key except claims: completions, releases, renewals,
         * reads (a ledger that went down after the claim; a redelivery's claim is answered, the
         * claim's own outage is {@link #STATEMENTS}' scenario).
         */
        AFTER_CLAIM,
        /** The commit of a transaction in which a ledger statement bound the key. */
        COMMIT
    }

    /** One armed fault. Thread-safe. */
    public static final class Fault {
        private final String key;
        private final Point point;
        private final AtomicInteger left;
        private final AtomicInteger fired = new AtomicInteger();
        private final List<String> what = new CopyOnWriteArrayList<>();
        private final AtomicBoolean refusedCompletion = new AtomicBoolean();

        Fault(String key, Point point, int times) {
            this.key = key;
            this.point = point;
            this.left = new AtomicInteger(times);
        }

        /** How many statements or commits it failed. */
        public int fired() {
            return fired.get();
        }

        /** What it failed, one line each (the statement's first words, or "commit"), for failure messages. */
        public List<String> failed() {
            return List.copyOf(what);
        }

        /** Whether it failed a statement that completes a claim. */
        public boolean refusedCompletion() {
            return refusedCompletion.get();
        }

        /** The ledger answers again for this key. */
        public void clear() {
            left.set(0);
        }

        /** Whether this call fails; {@code completion}: the call would have completed a claim. */
        boolean fire(String description, boolean completion) {
            if (left.getAndUpdate(n -> n > 0 ? n - 1 : 0) <= 0) {
                return false;
            }
            fired.incrementAndGet();
            what.add(description);
            if (completion) {
                refusedCompletion.set(true);
            }
            return true;
        }

        @Override
        public String toString() {
            return point + " fault on " + key + ", fired " + fired() + " " + failed();
        }
    }

    private final Map<String, List<Fault>> faults = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Arms a fault on {@code key} at {@code point} for its first {@code times} hits
     * ({@link Integer#MAX_VALUE}: until cleared).
     */
    public Fault fail(String key, Point point, int times) {
        Fault fault = new Fault(key, point, times);
        faults.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(fault);
        return fault;
    }

    /** The database behind {@code dataSource}'s faults (the catalogue's own reads go there). */
    public static DataSource bypass(DataSource dataSource) {
        return dataSource instanceof FaultyDataSource faulty ? faulty.target() : dataSource;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof DataSource dataSource && !(bean instanceof FaultyDataSource)) {
            return new FaultyDataSource(dataSource, this);
        }
        return bean;
    }

    /** The armed faults of the keys that {@code values} bind, at {@code point}. */
    List<Fault> armed(Collection<Object> values, Point point) {
        if (faults.isEmpty()) {
            return List.of();
        }
        List<Fault> found = new ArrayList<>();
        for (Object value : values) {
            for (String key : keysIn(value)) {
                for (Fault fault : faults.getOrDefault(key, List.of())) {
                    if (fault.point == point) {
                        found.add(fault);
                    }
                }
            }
        }
        return found;
    }

    private static List<String> keysIn(@Nullable Object value) {
        if (value instanceof String string) {
            return List.of(string);
        }
        if (value instanceof Object[] array) {
            List<String> keys = new ArrayList<>();
            for (Object element : array) {
                keys.addAll(keysIn(element));
            }
            return keys;
        }
        if (value instanceof Collection<?> collection) {
            return keysIn(collection.toArray());
        }
        return List.of();
    }

    private static boolean onLedger(@Nullable String sql) {
        return sql != null && sql.toLowerCase(Locale.ROOT).contains("processed_messages");
    }

    /** The ledger's claims are its only INSERTs (an upsert each, alone or in a CTE). */
    private static boolean isClaim(String sql) {
        return sql.toUpperCase(Locale.ROOT).contains("INSERT INTO");
    }

    private static String firstWords(String sql) {
        String flat = sql.strip().replaceAll("\\s+", " ");
        return flat.length() > 80 ? flat.substring(0, 80) + "…" : flat;
    }

    private static SQLTransientConnectionException down(String what) {
        return new SQLTransientConnectionException(
                "Injected by the catalogue: the ledger is down (" + what + ")", "08006");
    }

    private static Object invoke(Object target, Method method, @Nullable Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException ex) {
            throw ex.getCause();
        }
    }

    /** The wrapper of the application's DataSource; closes the pool it wraps with the context. */
    static final class FaultyDataSource extends DelegatingDataSource implements AutoCloseable {

        private final LedgerFaults faults;

        FaultyDataSource(DataSource target, LedgerFaults faults) {
            super(target);
            this.faults = faults;
        }

        DataSource target() {
            return obtainTargetDataSource();
        }

        @Override
        public Connection getConnection() throws SQLException {
            return wrap(super.getConnection());
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return wrap(super.getConnection(username, password));
        }

        private Connection wrap(Connection connection) {
            return (Connection) Proxy.newProxyInstance(
                    LedgerFaults.class.getClassLoader(),
                    new Class<?>[] {Connection.class},
                    new ConnectionHandler(connection, faults));
        }

        @Override
        public void close() throws Exception {
            if (obtainTargetDataSource() instanceof AutoCloseable closeable) {
                closeable.close();
            }
        }
    }

    /** A connection: wraps its statements, remembers its arrays' elements, fails its commit when told. */
    private static final class ConnectionHandler implements InvocationHandler {

        private final Connection target;
        private final LedgerFaults faults;
        private final Map<Array, Object[]> arrays = new IdentityHashMap<>();
        // COMMIT faults whose key a ledger statement of the current transaction bound.
        private final Set<Fault> inTransaction = new LinkedHashSet<>();
        private @Nullable Connection self;

        ConnectionHandler(Connection target, LedgerFaults faults) {
            this.target = target;
            this.faults = faults;
        }

        @Override
        public Object invoke(Object proxy, Method method, @Nullable Object[] args) throws Throwable {
            self = (Connection) proxy;
            switch (method.getName()) {
                case "equals" -> {
                    return proxy == args[0];
                }
                case "hashCode" -> {
                    return System.identityHashCode(proxy);
                }
                case "createArrayOf" -> {
                    Array array = (Array) LedgerFaults.invoke(target, method, args);
                    synchronized (arrays) {
                        arrays.put(array, (Object[]) args[1]);
                    }
                    return array;
                }
                case "prepareStatement", "prepareCall" -> {
                    Object statement = LedgerFaults.invoke(target, method, args);
                    return statement(statement, (String) args[0]);
                }
                case "createStatement" -> {
                    return statement(LedgerFaults.invoke(target, method, args), null);
                }
                case "commit" -> {
                    List<Fault> pending;
                    synchronized (inTransaction) {
                        pending = List.copyOf(inTransaction);
                        inTransaction.clear();
                    }
                    for (Fault fault : pending) {
                        if (fault.fire("commit", false)) {
                            target.rollback();
                            throw down("commit of a transaction that wrote " + fault.key);
                        }
                    }
                    return LedgerFaults.invoke(target, method, args);
                }
                case "rollback", "close" -> {
                    synchronized (inTransaction) {
                        inTransaction.clear();
                    }
                    return LedgerFaults.invoke(target, method, args);
                }
                default -> {
                    return LedgerFaults.invoke(target, method, args);
                }
            }
        }

        private Object statement(Object statement, @Nullable String sql) {
            Class<?> type = statement instanceof CallableStatement
                    ? CallableStatement.class
                    : statement instanceof PreparedStatement ? PreparedStatement.class : Statement.class;
            return Proxy.newProxyInstance(
                    LedgerFaults.class.getClassLoader(),
                    new Class<?>[] {type},
                    new StatementHandler((Statement) statement, sql, this));
        }

        Object[] elements(Array array) throws SQLException {
            synchronized (arrays) {
                Object[] elements = arrays.get(array);
                if (elements != null) {
                    return elements;
                }
            }
            return (Object[]) array.getArray();
        }

        /** Fails a statement about to run, or marks its transaction for a commit fault. */
        void beforeExecute(@Nullable String sql, Collection<Object> values) throws SQLException {
            if (!onLedger(sql)) {
                return;
            }
            List<Fault> refusing = new ArrayList<>(faults.armed(values, Point.STATEMENTS));
            if (!isClaim(sql)) {
                refusing.addAll(faults.armed(values, Point.AFTER_CLAIM));
            }
            for (Fault fault : refusing) {
                if (fault.fire(firstWords(sql), sql.contains("SET status = 'COMPLETED'"))) {
                    throw down(firstWords(sql));
                }
            }
            List<Fault> commits = faults.armed(values, Point.COMMIT);
            if (!commits.isEmpty() && !target.getAutoCommit()) {
                synchronized (inTransaction) {
                    inTransaction.addAll(commits);
                }
            }
        }
    }

    /** A statement: remembers what it binds, asks its connection before it runs. */
    private static final class StatementHandler implements InvocationHandler {

        private final Statement target;
        private final @Nullable String sql;
        private final ConnectionHandler connection;
        private final Map<Integer, Object> parameters = new HashMap<>();
        private final List<Object> batched = new ArrayList<>();

        StatementHandler(Statement target, @Nullable String sql, ConnectionHandler connection) {
            this.target = target;
            this.sql = sql;
            this.connection = connection;
        }

        @Override
        public Object invoke(Object proxy, Method method, @Nullable Object[] args) throws Throwable {
            String name = method.getName();
            if (name.equals("equals")) {
                return proxy == args[0];
            }
            if (name.equals("hashCode")) {
                return System.identityHashCode(proxy);
            }
            if (name.equals("getConnection")) {
                return connection.self;
            }
            if (name.startsWith("set") && args != null && args.length >= 2 && args[0] instanceof Integer index) {
                Object value = args[1];
                parameters.put(index, value instanceof Array array ? connection.elements(array) : value);
            } else if (name.equals("clearParameters")) {
                parameters.clear();
            } else if (name.equals("addBatch")) {
                if (args != null && args.length == 1 && args[0] instanceof String batchSql) {
                    connection.beforeExecute(batchSql, List.of());
                } else {
                    batched.addAll(parameters.values());
                }
            } else if (name.equals("clearBatch")) {
                batched.clear();
            } else if (name.startsWith("execute")) {
                String statementSql = args != null && args.length >= 1 && args[0] instanceof String given ? given : sql;
                List<Object> values = new ArrayList<>(parameters.values());
                values.addAll(batched);
                if (name.equals("executeBatch") || name.equals("executeLargeBatch")) {
                    batched.clear();
                }
                connection.beforeExecute(statementSql, values);
            }
            return LedgerFaults.invoke(target, method, args);
        }
    }

    @Override
    public String toString() {
        return "LedgerFaults" + Arrays.toString(faults.values().toArray());
    }
}
