// Typed views over JSON objects: every type of the API (generated from the
// specs into Generated/) is a JsonModel whose properties read and write its
// Raw object through a Codec. Fields the SDK does not know yet stay in Raw,
// and an absent field is told apart from a null one.
using System;
using System.Collections.Generic;
using System.Globalization;

namespace Matchmaking.Client
{
    /// <summary>Names the JSON field a property reads and writes, and the spec's type for it (a test holds both to the spec).</summary>
    [AttributeUsage(AttributeTargets.Property)]
    public sealed class JsonFieldAttribute : Attribute
    {
        public JsonFieldAttribute(string name, string specType, bool required)
        {
            Name = name;
            SpecType = specType;
            Required = required;
        }
        public string Name { get; private set; }
        public string SpecType { get; private set; }
        public bool Required { get; private set; }
    }

    /// <summary>Names the spec schema a generated class stands for.</summary>
    [AttributeUsage(AttributeTargets.Class)]
    public sealed class SpecSchemaAttribute : Attribute
    {
        public SpecSchemaAttribute(string pointer) { Pointer = pointer; }
        /// <summary>e.g. "openapi:#/components/schemas/MatchRecord".</summary>
        public string Pointer { get; private set; }
    }

    /// <summary>A typed view of a JSON object.</summary>
    public class JsonModel
    {
        JsonObject raw = new JsonObject();

        /// <summary>The JSON object itself (every field, known to this SDK or not).</summary>
        public JsonObject Raw { get { return raw; } }

        internal void Attach(JsonObject o) { raw = o ?? new JsonObject(); }

        /// <summary>Whether the field is present (even if null).</summary>
        public bool Has(string field) { return raw.ContainsKey(field); }

        /// <summary>This object as another typed view (the same Raw object).</summary>
        public T As<T>() where T : JsonModel, new() { return Wrap<T>(raw); }

        /// <summary>A typed view of <paramref name="o"/>.</summary>
        public static T Wrap<T>(JsonObject o) where T : JsonModel, new()
        {
            var m = new T();
            m.Attach(o);
            return m;
        }

        /// <summary>Parses JSON text into a typed view.</summary>
        public static T Parse<T>(string json) where T : JsonModel, new()
        {
            var o = Json.Parse(json) as JsonObject;
            if (o == null) throw new FormatException("not a JSON object: " + json);
            return Wrap<T>(o);
        }

        protected T Get<T>(string field, Codec<T> codec) { return codec.Read(raw[field]); }

        protected void Set<T>(string field, T value, Codec<T> codec)
        {
            if (value == null) raw.Remove(field);
            else raw[field] = codec.Write(value);
        }

        public string ToJson() { return Json.Serialize(raw); }
        public override string ToString() { return GetType().Name + " " + ToJson(); }
    }

    /// <summary>Converts between a JSON value and a C# value.</summary>
    public sealed class Codec<T>
    {
        public Codec(Func<object, T> read, Func<T, object> write) { Read = read; Write = write; }
        public Func<object, T> Read { get; private set; }
        public Func<T, object> Write { get; private set; }
    }

    /// <summary>The codecs the generated types use.</summary>
    public static class Codecs
    {
        public static readonly Codec<string> String = new Codec<string>(v => v == null ? null : v as string ?? Convert.ToString(v, CultureInfo.InvariantCulture), v => v);
        public static readonly Codec<long> Long = new Codec<long>(v => ToLong(v) ?? 0L, v => v);
        public static readonly Codec<long?> NLong = new Codec<long?>(ToLong, v => v.HasValue ? (object)v.Value : null);
        public static readonly Codec<double> Double = new Codec<double>(v => ToDouble(v) ?? 0.0, v => v);
        public static readonly Codec<double?> NDouble = new Codec<double?>(ToDouble, v => v.HasValue ? (object)v.Value : null);
        public static readonly Codec<bool> Bool = new Codec<bool>(v => v is bool && (bool)v, v => v);
        public static readonly Codec<bool?> NBool = new Codec<bool?>(v => v is bool ? (bool?)(bool)v : null, v => v.HasValue ? (object)v.Value : null);
        /// <summary>Any JSON value as read (JsonObject, List&lt;object&gt;, string, long, double, bool or null).</summary>
        public static readonly Codec<object> Any = new Codec<object>(v => v, v => ToJsonValue(v));

        public static Codec<T> Model<T>() where T : JsonModel, new()
        {
            return new Codec<T>(v => { var o = v as JsonObject; return o == null ? null : JsonModel.Wrap<T>(o); }, v => v.Raw);
        }

        public static Codec<IList<T>> List<T>(Codec<T> item)
        {
            return new Codec<IList<T>>(
                v =>
                {
                    var l = v as List<object>;
                    if (l == null) return null;
                    var r = new List<T>(l.Count);
                    foreach (var x in l) r.Add(item.Read(x));
                    return r;
                },
                v =>
                {
                    var r = new List<object>();
                    foreach (var x in v) r.Add(item.Write(x));
                    return r;
                });
        }

        public static Codec<IDictionary<string, T>> Map<T>(Codec<T> item)
        {
            return new Codec<IDictionary<string, T>>(
                v =>
                {
                    var o = v as JsonObject;
                    if (o == null) return null;
                    var r = new Dictionary<string, T>(StringComparer.Ordinal);
                    foreach (var k in o.OrderedKeys) r[k] = item.Read(o[k]);
                    return r;
                },
                v =>
                {
                    var r = new JsonObject();
                    foreach (var kv in v) r[kv.Key] = item.Write(kv.Value);
                    return r;
                });
        }

        static long? ToLong(object v)
        {
            if (v is long) return (long)v;
            if (v is double) return (long)(double)v;
            if (v is int) return (int)v;
            return null;
        }

        static double? ToDouble(object v)
        {
            if (v is double) return (double)v;
            if (v is long) return (long)v;
            if (v is int) return (int)v;
            return null;
        }

        /// <summary>A C# value as a JSON value (models become their Raw objects, dictionaries JsonObjects, lists List&lt;object&gt;).</summary>
        public static object ToJsonValue(object v)
        {
            if (v == null || v is string || v is bool || v is long || v is double || v is JsonObject) return v;
            if (v is int || v is short || v is byte) return Convert.ToInt64(v, CultureInfo.InvariantCulture);
            if (v is float || v is decimal) return Convert.ToDouble(v, CultureInfo.InvariantCulture);
            var m = v as JsonModel;
            if (m != null) return m.Raw;
            var d = v as System.Collections.IDictionary;
            if (d != null)
            {
                var o = new JsonObject();
                foreach (System.Collections.DictionaryEntry e in d) o[Convert.ToString(e.Key, CultureInfo.InvariantCulture)] = ToJsonValue(e.Value);
                return o;
            }
            var en = v as System.Collections.IEnumerable;
            if (en != null)
            {
                var l = new List<object>();
                foreach (var x in en) l.Add(ToJsonValue(x));
                return l;
            }
            return v;
        }
    }
}
