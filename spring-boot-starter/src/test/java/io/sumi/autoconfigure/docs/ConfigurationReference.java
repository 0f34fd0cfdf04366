package io.sumi.autoconfigure.docs;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.DefaultValue;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Renders {@code docs/reference.md}, the page of every property the starter binds, from its
 * configuration metadata: the file the configuration processor writes
 * ({@code target/classes/META-INF/spring-configuration-metadata.json}) merged with
 * {@code src/main/resources/META-INF/additional-spring-configuration-metadata.json}.
 *
 * <p>The processor does not descend into the values of a {@code Map<String, SomeRecord>} property
 * ({@code sumi.budgets}, {@code sumi.outbox.rabbit.routes}); their properties are read here the way
 * the processor reads a nested record: names and types from the record's components, defaults from
 * their {@code @DefaultValue}, descriptions from the record's {@code @param} Javadoc in the source.
 */
final class ConfigurationReference {

    /** How the page is regenerated; printed in the page and in the test's failure. */
    static final String REGENERATE = "./mvnw -B -pl spring-boot-starter -am verify"
            + " -Dtest=ConfigurationReferenceTests -Dsurefire.failIfNoSpecifiedTests=false -Djapicmp.skip"
            + " -Dsumi.docs.write=true";

    /** Where the semantics of a root are explained; a root not named here gets no such line. */
    private static final Map<String, String> EXPLAINED_IN = Map.ofEntries(
            Map.entry(
                    "sumi.consumer",
                    "[consumer-semantics.md](consumer-semantics.md), [kafka.md](kafka.md#configuration)"),
            Map.entry(
                    "sumi.ledger",
                    "[kafka.md](kafka.md#configuration), [ledger-semantics.md](ledger-semantics.md),"
                            + " [operations.md](operations.md)"),
            Map.entry(
                    "sumi.kafka",
                    "[kafka.md](kafka.md#configuration), [kafka-error-handling.md](kafka-error-handling.md),"
                            + " [kafka-poll-claim.md](kafka-poll-claim.md)"),
            Map.entry("sumi.jms", "[jms.md](jms.md#properties)"),
            Map.entry("sumi.rabbit", "[rabbitmq.md](rabbitmq.md#properties)"),
            Map.entry("sumi.stream", "[spring-cloud-stream.md](spring-cloud-stream.md#configuration-sumistream)"),
            Map.entry(
                    "sumi.outbox",
                    "[outbox.md](outbox.md#configuration), [outbox-semantics.md](outbox-semantics.md),"
                            + " [rabbitmq.md](rabbitmq.md#the-outbox-publishing-to-rabbitmq)"),
            Map.entry("sumi.budgets", "[paid-apis.md](paid-apis.md#properties)"),
            Map.entry("sumi.budget-pause", "[paid-apis.md](paid-apis.md#properties)"),
            Map.entry("sumi.health", "[operations.md](operations.md#health)"),
            Map.entry("sumi.passthrough", "[consumer-semantics.md](consumer-semantics.md#passing-the-key-downstream)"),
            Map.entry("management.endpoint.sumi", "[operations.md](operations.md#the-sumi-endpoint)"),
            Map.entry("management.health.sumi", "[operations.md](operations.md#health)"));

    private static final Pattern INLINE_TAG = Pattern.compile("\\{@(code|literal|link|linkplain|value)\\s");

    /** One documented property. */
    record Property(
            String name,
            String type,
            @Nullable String defaultValue,
            @Nullable String description,
            @Nullable Deprecation deprecation) {}

    /** A metadata {@code deprecation} entry. */
    record Deprecation(
            @Nullable String level,
            @Nullable String reason,
            @Nullable String replacement,
            @Nullable String since) {}

    private final Path moduleDir;

    ConfigurationReference(Path moduleDir) {
        this.moduleDir = moduleDir;
    }

    /** The merged metadata, map values expanded, sorted by name. */
    List<Property> properties() throws IOException {
        Path generated = moduleDir.resolve("target/classes/META-INF/spring-configuration-metadata.json");
        Path additional =
                moduleDir.resolve("src/main/resources/META-INF/additional-spring-configuration-metadata.json");
        if (!Files.exists(generated)) {
            throw new IllegalStateException(generated + " is missing: compile the module first");
        }
        Map<String, Property> byName = new TreeMap<>();
        for (Path file : List.of(generated, additional)) {
            if (!Files.exists(file)) {
                continue;
            }
            for (JsonNode node : JsonMapper.builder().build().readTree(file).path("properties")) {
                Property read = read(node);
                byName.merge(read.name(), read, ConfigurationReference::merge);
            }
        }
        List<Property> all = new ArrayList<>();
        for (Property property : byName.values()) {
            all.add(property);
            all.addAll(mapValueProperties(property));
        }
        return all;
    }

    /** The page. */
    String render(List<Property> properties, Map<String, String> groups) {
        Map<String, List<Property>> byRoot =
                new TreeMap<>(Comparator.comparing((String root) -> !root.startsWith("sumi."))
                        .thenComparing(Comparator.naturalOrder()));
        List<Property> deprecated = new ArrayList<>();
        for (Property property : properties) {
            if (property.deprecation() != null) {
                deprecated.add(property);
            } else {
                byRoot.computeIfAbsent(root(property.name()), root -> new ArrayList<>())
                        .add(property);
            }
        }
        StringBuilder page = new StringBuilder();
        page.append("<!-- Generated from the starter's configuration metadata by ConfigurationReferenceTests:"
                        + " do not edit by hand. Regenerate with\n     ")
                .append(REGENERATE)
                .append(" -->\n");
        page.append("# Configuration reference\n\n");
        page.append("Every property the Spring Boot starter binds, generated from its configuration metadata (the\n"
                + "Javadoc of its `@ConfigurationProperties` records and"
                + " `META-INF/additional-spring-configuration-metadata.json`).\n"
                + "Durations are written `500ms`, `30s`, `15m`, `14d`; data sizes `64KB`, `16MB`. A property that is"
                + " not set\nhas the default shown; an empty default means none. What the settings mean together,"
                + " and when to\nchange them, is explained on the pages each section links to.\n\n");
        page.append(byRoot.keySet().stream()
                        .map(root -> "[`" + root + "`](#" + GitHubAnchors.slug("`" + root + "`") + ")")
                        .collect(Collectors.joining(" · ")))
                .append(deprecated.isEmpty() ? "" : " · [deprecated properties](#deprecated-properties)")
                .append("\n");
        byRoot.forEach((root, members) -> {
            page.append("\n## `").append(root).append("`\n\n");
            String about = groups.get(root);
            if (about != null) {
                page.append(markdown(about)).append(' ');
            }
            String explained = EXPLAINED_IN.get(root);
            if (explained != null) {
                page.append("Explained in ").append(explained).append('.');
            }
            page.append(about != null || explained != null ? "\n\n" : "");
            page.append("| property | type | default | description |\n| --- | --- | --- | --- |\n");
            Set<String> introduced = new HashSet<>(Set.of(root));
            for (Property property : members) {
                for (String group : enclosing(property.name(), groups)) {
                    if (introduced.add(group)) {
                        page.append("| `")
                                .append(cell(group))
                                .append(".*` | | | ")
                                .append(cell(markdown(groups.get(group))))
                                .append(" |\n");
                    }
                }
                page.append("| `")
                        .append(cell(property.name()))
                        .append("` | ")
                        .append(type(property.type()))
                        .append(" | ")
                        .append(defaultValue(property))
                        .append(" | ")
                        .append(cell(markdown(property.description())))
                        .append(" |\n");
            }
        });
        if (!deprecated.isEmpty()) {
            page.append("\n## Deprecated properties\n\n");
            page.append("Still bound with a warning at start-up (level `warning`), or refused at start-up while set"
                    + " (level `error`).\n\n");
            page.append("| property | type | replacement | since | level | reason | description |\n"
                    + "| --- | --- | --- | --- | --- | --- | --- |\n");
            for (Property property : deprecated) {
                Deprecation deprecation = property.deprecation();
                page.append("| `")
                        .append(cell(property.name()))
                        .append("` | ")
                        .append(type(property.type()))
                        .append(" | ")
                        .append(deprecation.replacement() == null ? "" : "`" + cell(deprecation.replacement()) + "`")
                        .append(" | ")
                        .append(deprecation.since() == null ? "" : deprecation.since())
                        .append(" | ")
                        .append(deprecation.level() == null ? "warning" : deprecation.level())
                        .append(" | ")
                        .append(cell(markdown(deprecation.reason())))
                        .append(" | ")
                        .append(cell(markdown(property.description())))
                        .append(" |\n");
            }
        }
        return page.toString();
    }

    /** The described groups a property is in, the outermost first. */
    private static List<String> enclosing(String name, Map<String, String> groups) {
        List<String> enclosing = new ArrayList<>();
        for (int dot = name.indexOf('.'); dot > 0; dot = name.indexOf('.', dot + 1)) {
            if (groups.containsKey(name.substring(0, dot))) {
                enclosing.add(name.substring(0, dot));
            }
        }
        return enclosing;
    }

    /**
     * The descriptions of the metadata's groups that nest in a record: the {@code @param} of the
     * component that holds them ({@code sumi.ledger.pruning}: {@code Ledger}'s {@code @param pruning}).
     */
    Map<String, String> groups() throws IOException {
        Path generated = moduleDir.resolve("target/classes/META-INF/spring-configuration-metadata.json");
        Map<String, String> groups = new TreeMap<>();
        for (JsonNode group : JsonMapper.builder().build().readTree(generated).path("groups")) {
            String method = text(group.path("sourceMethod"));
            String sourceType = text(group.path("sourceType"));
            Class<?> source = sourceType == null ? null : load(sourceType);
            if (method == null || source == null || !source.isRecord()) {
                continue;
            }
            String description;
            try {
                description = recordParams(source).get(method.replace("()", ""));
            } catch (IllegalStateException ex) {
                continue; // no source to read: the group goes without a description
            }
            if (description != null && !description.isBlank()) {
                groups.put(group.path("name").asString(), description);
            }
        }
        return groups;
    }

    /** {@code sumi.kafka.poll-claim} → {@code sumi.kafka}; {@code management.endpoint.sumi.access} → {@code management.endpoint.sumi}. */
    static String root(String name) {
        List<String> segments = Arrays.asList(name.split("\\."));
        int sumi = segments.indexOf("sumi");
        if (sumi < 0) {
            return segments.size() > 1 ? String.join(".", segments.subList(0, segments.size() - 1)) : name;
        }
        int end = sumi == 0 ? Math.min(2, segments.size()) : sumi + 1;
        return String.join(".", segments.subList(0, end));
    }

    private static Property read(JsonNode node) {
        JsonNode deprecation = node.path("deprecation");
        Deprecation read = null;
        if (deprecation.isObject() || node.path("deprecated").asBoolean(false)) {
            read = new Deprecation(
                    text(deprecation.path("level")),
                    text(deprecation.path("reason")),
                    text(deprecation.path("replacement")),
                    text(deprecation.path("since")));
        }
        JsonNode value = node.path("defaultValue");
        String defaultValue = null;
        if (value.isArray()) {
            List<String> items = new ArrayList<>();
            value.values().forEach(item -> items.add(item.asString()));
            defaultValue = String.join(",", items);
        } else if (!value.isMissingNode() && !value.isNull()) {
            defaultValue = value.asString();
        }
        return new Property(
                node.path("name").asString(),
                node.path("type").asString("java.lang.String"),
                defaultValue,
                text(node.path("description")),
                read);
    }

    private static @Nullable String text(JsonNode node) {
        return node.isMissingNode() || node.isNull() ? null : node.asString();
    }

    /** The generated entry, with what the additional file says laid over it. */
    private static Property merge(Property generated, Property additional) {
        return new Property(
                generated.name(),
                additional.type() != null ? additional.type() : generated.type(),
                additional.defaultValue() != null ? additional.defaultValue() : generated.defaultValue(),
                additional.description() != null ? additional.description() : generated.description(),
                additional.deprecation() != null ? additional.deprecation() : generated.deprecation());
    }

    /** The properties of a {@code Map<String, SomeRecord>}'s values, as {@code name.<name>.component}. */
    private List<Property> mapValueProperties(Property property) {
        if (!property.type().startsWith("java.util.Map<")) {
            return List.of();
        }
        String valueType = property.type()
                .substring(property.type().indexOf(',') + 1, property.type().length() - 1)
                .trim();
        if (!valueType.startsWith("io.sumi.")) {
            return List.of();
        }
        Class<?> values = load(valueType);
        if (values == null || !values.isRecord()) {
            throw new IllegalStateException(property.name() + ": map values of type " + valueType
                    + " are not a record; teach ConfigurationReference to read them");
        }
        Map<String, String> docs = recordParams(values);
        RecordComponent[] components = values.getRecordComponents();
        Constructor<?> canonical;
        try {
            canonical = values.getDeclaredConstructor(
                    Arrays.stream(components).map(RecordComponent::getType).toArray(Class<?>[]::new));
        } catch (NoSuchMethodException ex) {
            throw new IllegalStateException(ex);
        }
        List<Property> expanded = new ArrayList<>();
        for (int i = 0; i < components.length; i++) {
            RecordComponent component = components[i];
            DefaultValue defaults = canonical.getParameters()[i].getAnnotation(DefaultValue.class);
            String defaultValue = defaults == null || defaults.value().length == 0
                    ? (defaults != null && component.getType() == String.class ? "" : null)
                    : String.join(",", defaults.value());
            expanded.add(new Property(
                    property.name() + ".<name>." + kebab(component.getName()),
                    typeName(component.getGenericType()),
                    defaultValue,
                    docs.get(component.getName()),
                    null));
        }
        expanded.sort(Comparator.comparing(Property::name));
        return expanded;
    }

    /** The {@code @param} Javadoc of a record, read from its source file in this module. */
    private Map<String, String> recordParams(Class<?> record) {
        Class<?> top = record;
        while (top.getEnclosingClass() != null) {
            top = top.getEnclosingClass();
        }
        Path source = source(top);
        String text;
        try {
            text = Files.readString(source, StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new IllegalStateException("cannot read the source of " + record.getName() + ": " + source, ex);
        }
        Matcher declaration = Pattern.compile("\\brecord\\s+" + Pattern.quote(record.getSimpleName()) + "\\s*\\(")
                .matcher(text);
        if (!declaration.find()) {
            throw new IllegalStateException("no record " + record.getSimpleName() + " in " + source);
        }
        int end = text.lastIndexOf("*/", declaration.start());
        int start = end < 0 ? -1 : text.lastIndexOf("/**", end);
        Map<String, String> params = new LinkedHashMap<>();
        if (start < 0
                || !text.substring(end + 2, declaration.start())
                        .replaceAll("@\\w+(\\([^)]*\\))?", "")
                        .replaceAll("\\b(public|static|final|protected|private)\\b", "")
                        .isBlank()) {
            return params;
        }
        String name = null;
        StringBuilder doc = new StringBuilder();
        for (String line : text.substring(start + 3, end).split("\n")) {
            String content = line.replaceFirst("^\\s*\\*?\\s?", "");
            if (content.startsWith("@")) {
                if (name != null) {
                    params.put(name, doc.toString().trim().replaceAll("\\s+", " "));
                }
                name = null;
                Matcher param = Pattern.compile("^@param\\s+(\\w+)\\s*(.*)$").matcher(content);
                if (param.matches()) {
                    name = param.group(1);
                    doc.setLength(0);
                    doc.append(param.group(2));
                }
            } else if (name != null) {
                doc.append(' ').append(content);
            }
        }
        if (name != null) {
            params.put(name, doc.toString().trim().replaceAll("\\s+", " "));
        }
        return params;
    }

    /** The source file of a top-level class: in this module, else in another module of the repository. */
    private Path source(Class<?> top) {
        Path relative = Path.of("src/main/java", top.getName().replace('.', '/') + ".java");
        Path own = moduleDir.resolve(relative);
        if (Files.exists(own)) {
            return own;
        }
        try (var modules = Files.walk(moduleDir.toAbsolutePath().normalize().getParent(), 3)) {
            return modules.map(module -> module.resolve(relative))
                    .filter(Files::exists)
                    .findFirst()
                    .orElse(own);
        } catch (IOException ex) {
            return own;
        }
    }

    private static @Nullable Class<?> load(String name) {
        String binary = name;
        while (true) {
            try {
                return Class.forName(binary, false, ConfigurationReference.class.getClassLoader());
            } catch (ClassNotFoundException ex) {
                int dot = binary.lastIndexOf('.');
                if (dot < 0) {
                    return null;
                }
                binary = binary.substring(0, dot) + "$" + binary.substring(dot + 1);
                if (binary.indexOf('.') < 0) {
                    return null;
                }
            }
        }
    }

    private static String typeName(Type type) {
        if (type instanceof Class<?> raw) {
            return raw.isPrimitive() ? boxed(raw) : raw.getName();
        }
        if (type instanceof ParameterizedType parameterized) {
            return typeName(parameterized.getRawType())
                    + Arrays.stream(parameterized.getActualTypeArguments())
                            .map(ConfigurationReference::typeName)
                            .collect(Collectors.joining(",", "<", ">"));
        }
        return type.getTypeName();
    }

    private static String boxed(Class<?> primitive) {
        return switch (primitive.getName()) {
            case "int" -> "java.lang.Integer";
            case "char" -> "java.lang.Character";
            default ->
                "java.lang." + Character.toUpperCase(primitive.getName().charAt(0))
                        + primitive.getName().substring(1);
        };
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
    }

    /** {@code java.util.List<java.lang.String>} → {@code `List<String>`}; an enum with its constants. */
    private static String type(String type) {
        String simple =
                type.replaceAll("\\b[a-z][a-z0-9_]*\\.", "").replace('$', '.').replace(",", ", ");
        String rendered = "`" + cell(simple) + "`";
        Class<?> loaded = type.contains("<") ? null : load(type);
        if (loaded != null && loaded.isEnum()) {
            rendered += ": "
                    + Arrays.stream(loaded.getEnumConstants())
                            .map(constant -> "`" + ((Enum<?>) constant).name() + "`")
                            .collect(Collectors.joining(", "));
        }
        return rendered;
    }

    private static String defaultValue(Property property) {
        String value = property.defaultValue();
        if (value == null) {
            return "";
        }
        if (property.type().startsWith("java.util.List<") && value.startsWith("[") && value.endsWith("]")) {
            // the processor writes a record's list default as the list's toString()
            value = Arrays.stream(value.substring(1, value.length() - 1).split(","))
                    .map(String::trim)
                    .collect(Collectors.joining(","));
        }
        return value.isEmpty() ? "`\"\"`" : "`" + cell(value) + "`";
    }

    /** Javadoc inline tags to Markdown, the first letter capitalized. */
    static String markdown(@Nullable String javadoc) {
        if (javadoc == null) {
            return "";
        }
        StringBuilder out = new StringBuilder();
        int at = 0;
        Matcher tag = INLINE_TAG.matcher(javadoc);
        while (tag.find(at)) {
            out.append(escapeText(javadoc.substring(at, tag.start())));
            int depth = 1;
            int i = tag.end();
            while (i < javadoc.length() && depth > 0) {
                char c = javadoc.charAt(i);
                depth += c == '{' ? 1 : c == '}' ? -1 : 0;
                i++;
            }
            String body = javadoc.substring(tag.end(), depth == 0 ? i - 1 : i).trim();
            if (tag.group(1).startsWith("link")) {
                int space = body.indexOf(' ');
                body = space > 0 ? body.substring(space + 1) : body.substring(body.lastIndexOf('.') + 1);
            }
            out.append(tag.group(1).equals("literal") ? escapeText(body) : code(body));
            at = i;
        }
        out.append(escapeText(javadoc.substring(at)));
        String text = out.toString().trim();
        if (text.isEmpty()) {
            return text;
        }
        return Character.toUpperCase(text.charAt(0)) + text.substring(1) + (text.endsWith(".") ? "" : ".");
    }

    private static String code(String body) {
        return body.contains("`") ? "`` " + body + " ``" : "`" + body + "`";
    }

    private static String escapeText(String text) {
        return text.replace("<", "&lt;").replace(">", "&gt;");
    }

    /** A table cell: pipes escaped (also inside code spans, as GitHub wants them). */
    private static String cell(String text) {
        return text.replace("|", "\\|");
    }
}
