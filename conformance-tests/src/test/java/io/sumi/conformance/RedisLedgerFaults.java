package io.sumi.conformance;

import io.sumi.conformance.LedgerFaults.Fault;
import io.sumi.conformance.LedgerFaults.Point;
import io.sumi.store.redis.RedisProcessedMessageStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.data.redis.RedisConnectionFailureException;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisScriptingCommands;
import org.springframework.util.ClassUtils;

/**
 * The "ledger down" faults of {@link LedgerFaults} on the Redis ledger: wraps the application's
 * {@link RedisConnectionFactory} bean so that a ledger script ({@code EVALSHA} or {@code EVAL})
 * whose keys or arguments name an armed key fails, before it reaches Redis, with the
 * {@link RedisConnectionFailureException} Spring Data gives for a lost connection. A script is
 * known by its SHA-1, computed here from the store's own script resources as the store computes
 * it: {@link Point#AFTER_CLAIM} spares the claim script only, and a completion is the
 * {@code complete} script. The faults are armed in the application's {@link LedgerFaults} (a
 * scenario's {@code ledgerFaults().fail(..)}); the catalogue's own reads take the factory around
 * them ({@link #bypass}).
 */
public final class RedisLedgerFaults implements BeanPostProcessor {

    private static final List<String> SCRIPTS =
            List.of("claim", "complete", "release", "release_unrun", "renew", "reconcile", "resolve", "stats");

    private final LedgerFaults faults;
    private final Map<String, String> scriptBySha = scriptsBySha();

    public RedisLedgerFaults(LedgerFaults faults) {
        this.faults = faults;
    }

    /** The factory behind {@code factory}'s faults. */
    public static RedisConnectionFactory bypass(RedisConnectionFactory factory) {
        if (Proxy.isProxyClass(factory.getClass()) && Proxy.getInvocationHandler(factory) instanceof Faulty faulty) {
            return (RedisConnectionFactory) faulty.target;
        }
        return factory;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof RedisConnectionFactory factory && bypass(factory) == factory) {
            return proxy(bean, new Faulty(bean, this::connection));
        }
        return bean;
    }

    /** A connection of the factory: its scripting commands are checked. */
    private Object connection(Object connection) {
        return proxy(connection, new Faulty(connection, commands -> commands));
    }

    private Object scripting(Object commands) {
        return proxy(commands, (proxy, method, args) -> {
            String name = method.getName();
            if (name.equals("equals")) {
                return args != null && proxy == args[0];
            }
            if ((name.equals("evalSha") || name.equals("eval")) && args != null && args.length == 4) {
                String script = name.equals("eval")
                        ? scriptBySha.getOrDefault(sha1((byte[]) args[0]), "unknown")
                        : scriptBySha.getOrDefault(
                                args[0] instanceof byte[] sha
                                        ? new String(sha, StandardCharsets.UTF_8)
                                        : String.valueOf(args[0]),
                                "unknown");
                beforeScript(script, (byte[][]) args[3]);
            }
            return invoke(commands, method, args);
        });
    }

    private void beforeScript(String script, byte[][] keysAndArgs) {
        List<Object> named = new ArrayList<>();
        for (byte[] value : keysAndArgs) {
            String text = new String(value, StandardCharsets.UTF_8);
            named.add(text);
            int row = text.lastIndexOf(":m:");
            if (row >= 0) {
                named.add(text.substring(row + 3)); // a row key names its message id
            }
        }
        List<Fault> refusing = new ArrayList<>(faults.armed(named, Point.STATEMENTS));
        if (!script.equals("claim")) {
            refusing.addAll(faults.armed(named, Point.AFTER_CLAIM));
        }
        for (Fault fault : refusing) {
            if (fault.fire(script + " script", script.equals("complete"))) {
                throw new RedisConnectionFailureException(
                        "Injected by the catalogue: the Redis ledger is down (" + script + " script)");
            }
        }
    }

    private static Object proxy(Object target, InvocationHandler handler) {
        return Proxy.newProxyInstance(
                RedisLedgerFaults.class.getClassLoader(), ClassUtils.getAllInterfaces(target), handler);
    }

    private static @Nullable Object invoke(Object target, Method method, @Nullable Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException ex) {
            throw ex.getCause();
        }
    }

    /** A factory or a connection whose results ({@code getConnection()}, {@code scriptingCommands()}) are wrapped. */
    private final class Faulty implements InvocationHandler {

        final Object target;
        private final UnaryOperator<Object> connections;

        Faulty(Object target, UnaryOperator<Object> connections) {
            this.target = target;
            this.connections = connections;
        }

        @Override
        public @Nullable Object invoke(Object proxy, Method method, @Nullable Object[] args) throws Throwable {
            String name = method.getName();
            if (name.equals("equals")) {
                return args != null && proxy == args[0];
            }
            Object result = RedisLedgerFaults.invoke(target, method, args);
            if (result != null && (name.equals("getConnection") || name.equals("getClusterConnection"))) {
                return connections.apply(result);
            }
            if (result instanceof RedisScriptingCommands && name.equals("scriptingCommands")) {
                return scripting(result);
            }
            return result;
        }
    }

    /** The ledger scripts' SHA-1s, computed as the store does: its common prelude, a newline, the script. */
    private static Map<String, String> scriptsBySha() {
        String prelude = resource("common");
        Map<String, String> names = new HashMap<>();
        for (String script : SCRIPTS) {
            names.put(sha1((prelude + "\n" + resource(script)).getBytes(StandardCharsets.UTF_8)), script);
        }
        return names;
    }

    private static String resource(String name) {
        try (InputStream in = RedisProcessedMessageStore.class.getResourceAsStream(name + ".lua")) {
            if (in == null) {
                throw new IllegalStateException("No Redis ledger script " + name + ".lua");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static String sha1(byte[] body) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(body));
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
